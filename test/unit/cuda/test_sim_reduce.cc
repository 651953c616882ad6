// The reduction kernel (cuda/reduce.hpp) against the simulator, which runs
// it on the host: every operation on every type it takes, in place, a slice
// of the elements, and the arguments it refuses. Expected values are computed
// here, independently of the kernel's operation definitions.
#include "gdrpipe/cuda/reduce.hpp"

#include "sim_fixture.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

using namespace gdrpipe::cuda;
using namespace gdrpipe::cuda::test;

namespace {

constexpr std::size_t kN = 1000;
constexpr unsigned kBufs = 3;

// value of element i of source s: small, with zeros and negatives
long long gen(unsigned s, std::size_t i) {
    return static_cast<long long>(((s + 1) * 5 + i * 7) % 7) - 2;
}

// a op b in the type's own arithmetic
template <typename T>
T fold(unsigned op, T a, T b) {
    switch (op) {
    case GP_RED_SUM: return T(a + b);
    case GP_RED_PROD: return T(a * b);
    case GP_RED_MIN: return a < b ? a : b;
    case GP_RED_MAX: return a > b ? a : b;
    case GP_RED_LAND: return T(a != T(0) && b != T(0) ? 1 : 0);
    case GP_RED_LOR: return T(a != T(0) || b != T(0) ? 1 : 0);
    case GP_RED_LXOR: return T((a != T(0)) != (b != T(0)) ? 1 : 0);
    default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        if (op == GP_RED_BAND) return T(a & b);
        if (op == GP_RED_BOR) return T(a | b);
        return T(a ^ b);
    }
    return a;
}

template <typename T>
void check_type(unsigned type) {
    for (unsigned op = 0; op < GP_RED_NOPS; ++op) {
        if (!gp_red_valid(type, op)) continue;
        INFO("type " << type << " op " << op);
        DevBuf s0(0, kN * sizeof(T)), s1(0, kN * sizeof(T)), s2(1, kN * sizeof(T));
        DevBuf d0(0, kN * sizeof(T)), d1(1, kN * sizeof(T));
        DevBuf *src[kBufs] = {&s0, &s1, &s2};
        std::vector<T> h(kN);
        for (unsigned s = 0; s < kBufs; ++s) {
            for (std::size_t i = 0; i < kN; ++i) h[i] = T(gen(s, i));
            REQUIRE(copy(src[s]->p(), h.data(), kN * sizeof(T)).ok());
        }
        REQUIRE(devices().enable_peer_access(0, 1) == CUDA_SUCCESS);
        gp_reduce_args_t a{};
        for (unsigned s = 0; s < kBufs; ++s) a.src[s] = src[s]->ptr;
        a.dst[0] = d0.ptr;
        a.dst[1] = d1.ptr;
        a.nsrc = kBufs;
        a.ndst = 2;
        a.begin = 0;
        a.end = kN;
        a.type = type;
        a.op = op;
        Status st = reduce(0, a);
        INFO(st.message);
        REQUIRE(st.ok());
        for (DevBuf *d : {&d0, &d1}) {
            std::vector<T> got(kN);
            REQUIRE(copy(got.data(), d->p(), kN * sizeof(T)).ok());
            std::size_t bad = 0;
            for (std::size_t i = 0; i < kN; ++i) {
                T want = T(gen(0, i));
                for (unsigned s = 1; s < kBufs; ++s) want = fold<T>(op, want, T(gen(s, i)));
                if (got[i] != want) ++bad;
            }
            CHECK(bad == 0);
        }
    }
}

} // namespace

TEST_CASE("sim: the reduction kernel does every operation on every type", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    check_type<signed char>(GP_RED_I8);
    check_type<unsigned char>(GP_RED_U8);
    check_type<short>(GP_RED_I16);
    check_type<unsigned short>(GP_RED_U16);
    check_type<int>(GP_RED_I32);
    check_type<unsigned>(GP_RED_U32);
    check_type<long long>(GP_RED_I64);
    check_type<unsigned long long>(GP_RED_U64);
    check_type<float>(GP_RED_F32);
    check_type<double>(GP_RED_F64);
}

TEST_CASE("sim: a reduction in place and over a slice leaves the rest alone", "[cuda][sim]") {
    GP_REQUIRE_SIM();
    DevBuf a(0, kN * sizeof(double)), b(0, kN * sizeof(double));
    std::vector<double> ha(kN), hb(kN);
    for (std::size_t i = 0; i < kN; ++i) {
        ha[i] = double(i);
        hb[i] = 1000.0 + double(i);
    }
    REQUIRE(copy(a.p(), ha.data(), kN * sizeof(double)).ok());
    REQUIRE(copy(b.p(), hb.data(), kN * sizeof(double)).ok());
    gp_reduce_args_t r{};
    r.src[0] = a.ptr; // a = a + b, b = a + b, elements [100, 300) only
    r.src[1] = b.ptr;
    r.dst[0] = a.ptr;
    r.dst[1] = b.ptr;
    r.nsrc = 2;
    r.ndst = 2;
    r.begin = 100;
    r.end = 300;
    r.type = GP_RED_F64;
    r.op = GP_RED_SUM;
    REQUIRE(reduce(0, r).ok());
    std::vector<double> ga(kN), gb(kN);
    REQUIRE(copy(ga.data(), a.p(), kN * sizeof(double)).ok());
    REQUIRE(copy(gb.data(), b.p(), kN * sizeof(double)).ok());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < kN; ++i) {
        const bool in = i >= 100 && i < 300;
        bad += ga[i] != (in ? 1000.0 + 2.0 * double(i) : double(i));
        bad += gb[i] != (in ? 1000.0 + 2.0 * double(i) : 1000.0 + double(i));
    }
    CHECK(bad == 0);
}

TEST_CASE("sim: the reduction refuses bad arguments and memory a kernel cannot reach",
          "[cuda][sim]") {
    GP_REQUIRE_SIM();
    DevBuf a(0, 64 * sizeof(int)), b(0, 64 * sizeof(int));
    gp_reduce_args_t r{};
    r.src[0] = a.ptr;
    r.dst[0] = b.ptr;
    r.nsrc = 1;
    r.ndst = 1;
    r.end = 64;
    r.type = GP_RED_I32;
    r.op = GP_RED_SUM;
    REQUIRE(reduce(0, r).ok());
    gp_reduce_args_t bad = r;
    bad.nsrc = 0;
    CHECK_FALSE(reduce(0, bad).ok());
    bad = r;
    bad.nsrc = GP_REDUCE_MAX_BUFS + 1;
    CHECK_FALSE(reduce(0, bad).ok());
    bad = r;
    bad.type = GP_RED_F32;
    bad.op = GP_RED_BXOR; // bitwise operations are for integers
    CHECK_FALSE(reduce(0, bad).ok());
    bad = r;
    bad.begin = 10;
    bad.end = 5;
    CHECK_FALSE(reduce(0, bad).ok());
    // pageable host memory: an illegal address for a kernel, nothing written
    std::vector<int> host(64, 7);
    bad = r;
    bad.dst[0] = reinterpret_cast<std::uintptr_t>(host.data());
    Status st = reduce(0, bad);
    CHECK_FALSE(st.ok());
    CHECK(st.code == CUDA_ERROR_ILLEGAL_ADDRESS);
    for (int v : host) CHECK(v == 7);
}
