// Test helper: a fresh directory under /tmp, removed with everything in it
// when the object goes out of scope. (Unit tests get test/common on their
// include path through catch_main_dep.)
#pragma once
#include "gp_catch.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include <stdlib.h>

namespace gdrpipe::test {

struct TempDir {
    std::string path;
    // prefix: names the directory /tmp/<prefix>-XXXXXX (which test left it)
    explicit TempDir(const std::string &prefix = "gdrpipe-test") {
        std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        const char *p = ::mkdtemp(buf.data());
        REQUIRE(p != nullptr);
        path = p;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
};

} // namespace gdrpipe::test
