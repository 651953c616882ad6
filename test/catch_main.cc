// The tests' main: Catch2 2 defines it in the header on request; Catch2 3
// links it from Catch2WithMain (test/meson.build).
#if !__has_include(<catch2/catch_all.hpp>)
#define CATCH_CONFIG_MAIN
#endif
#include "gp_catch.hpp"
