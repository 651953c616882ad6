#include "gdrpipe/rkey.h"

#include "gdrpipe/bytes.hpp"

#include "gp_catch.hpp"

#include <cstring>
#include <random>
#include <vector>

TEST_CASE("sealed remote keys validate; any corruption is rejected", "[wire]") {
    gp_rkey_t k{};
    k.kind = GP_RKEY_CUDA_IPC;
    k.pid = 1234;
    k.device = 0;
    k.handle_fd = -1;
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

TEST_CASE("remote keys whose fields do not fit their kind are rejected", "[wire]") {
    auto sealed = [](uint16_t kind, int32_t device, int32_t fd) {
        gp_rkey_t k{};
        k.kind = kind;
        k.pid = 1234;
        k.device = device;
        k.handle_fd = fd;
        k.base = 0x7f0000000000ull;
        k.length = 4096;
        gp_rkey_seal(&k);
        return k;
    };
    auto ok = [](const gp_rkey_t &k) { return gp_rkey_check(&k) == nullptr; };
    CHECK(ok(sealed(GP_RKEY_HOST, -1, -1)));
    CHECK(!ok(sealed(GP_RKEY_HOST, 0, -1)));   // host memory on a device
    CHECK(!ok(sealed(GP_RKEY_HOST, -1, 5)));   // host memory with a handle fd
    CHECK(ok(sealed(GP_RKEY_CUDA_IPC, 1, -1)));
    CHECK(!ok(sealed(GP_RKEY_CUDA_IPC, -1, -1)));
    CHECK(!ok(sealed(GP_RKEY_CUDA_IPC, 0, 3)));
    CHECK(ok(sealed(GP_RKEY_CUDA_NONE, -1, -1))); // managed memory: no device
    CHECK(!ok(sealed(GP_RKEY_CUDA_NONE, -2, -1)));
    for (uint16_t kind : {uint16_t(GP_RKEY_CUDA_VMM), uint16_t(GP_RKEY_CUDA_POOL)}) {
        CHECK(ok(sealed(kind, 0, 9)));
        CHECK(!ok(sealed(kind, 0, -1))); // no fd to fetch the handle from
        CHECK(!ok(sealed(kind, -1, 9)));
    }
}

TEST_CASE("the word-wise checksum sees every single-bit change and the length", "[wire]") {
    std::mt19937 rng(11);
    std::vector<unsigned char> buf(160);
    for (auto &c : buf) c = static_cast<unsigned char>(rng());
    for (size_t n = 1; n <= buf.size(); ++n) {
        const uint32_t h = gdrpipe::hash32_words(buf.data(), n);
        for (size_t pos = 0; pos < n; ++pos) {
            for (int bit = 0; bit < 8; ++bit) {
                buf[pos] ^= static_cast<unsigned char>(1u << bit);
                const bool differs = gdrpipe::hash32_words(buf.data(), n) != h;
                buf[pos] ^= static_cast<unsigned char>(1u << bit);
                if (!differs) FAIL("no change at length " << n << " byte " << pos << " bit " << bit);
            }
        }
    }
    // a trailing zero byte is another message
    std::vector<unsigned char> z(17, 0);
    CHECK(gdrpipe::hash32_words(z.data(), 16) != gdrpipe::hash32_words(z.data(), 17));
    CHECK(gdrpipe::hash32_words(z.data(), 0) != gdrpipe::hash32_words(z.data(), 8));
}
