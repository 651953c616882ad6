// Catch2 for the tests, version 2 (Debian 12: one header) or 3 (Debian 13:
// a library, catch_all.hpp); the tests use what both versions offer.
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

#if __has_include(<catch2/catch_all.hpp>)
using Catch::Approx;
#endif
