#include "gdrpipe/rkey.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

TEST_CASE("sealed remote keys validate; any corruption is rejected", "[wire]") {
    gp_rkey_t k{};
    k.kind = GP_RKEY_CUDA_IPC;
    k.pid = 1234;
    k.device = 0;
    k.base = 0x7f0000000000ull;
    k.length = 1 << 20;
    k.buffer_id = 77;
    gp_rkey_seal(&k);
    CHECK(gp_rkey_check(&k) == nullptr);

    std::mt19937 rng(5);
    for (int trial = 0; trial < 200; ++trial) {
        gp_rkey_t c = k;
        auto *bytes = reinterpret_cast<unsigned char *>(&c);
        size_t pos = rng() % sizeof(c);
        bytes[pos] ^= uint8_t(1u << (rng() % 8));
        CHECK(gp_rkey_check(&c) != nullptr);
    }
    gp_rkey_t z{};
    CHECK(gp_rkey_check(&z) != nullptr);
    gp_rkey_t bad = k;
    bad.kind = 99;
    gp_rkey_seal(&bad);
    CHECK(gp_rkey_check(&bad) != nullptr);
}
