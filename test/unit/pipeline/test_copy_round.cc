// Rounds of direct copies (XferEngine::begin_round, copy_round.cc): the
// device copies started inside a round are launched together, one batched
// copy kernel per device, when it ends; lone copies, host memory and a device
// that refuses the kernel keep the copy engine; the data lands either way.
#include "server.hpp"

#include "gdrpipe/cuda/copy_kernel.hpp"

#include <cstdlib>

using namespace pt;

namespace {

struct Slot {
    int where;    // local memory
    size_t len;   // bytes moved
    size_t skew;  // local start past the allocation's (unaligned copies)
};

// One round of gets, then one of puts, over `slots` (each its own remote
// device buffer on B's device 0); data checked byte for byte. The stats of
// the engine before and after come back in *before / *after.
int round_trip(Node &n, const std::vector<Slot> &slots, uint64_t seed,
               gdrpipe::pipeline::XferStats *before, gdrpipe::pipeline::XferStats *after) {
    const size_t k = slots.size();
    std::vector<Reply> remote(k);
    std::vector<Buf> local(k);
    for (size_t i = 0; i < k; ++i) {
        PT_CHECK(remote_alloc(n, kDev0, slots[i].len, seed + i, true, &remote[i]));
        PT_CHECK(buf_alloc(local[i], slots[i].where, slots[i].len + slots[i].skew));
        PT_CHECK(buf_zero(local[i]));
    }
    *before = n.eng()->stats();
    for (int put = 0; put < 2; ++put) {
        std::vector<Done> done(k);
        gp_xfer_round_begin(n.engines[0]);
        for (size_t i = 0; i < k; ++i) {
            struct iovec iov{static_cast<char *>(local[i].p) + slots[i].skew, slots[i].len};
            const int r = gp_xfer_start(n.engines[0], n.peer, put ? 0 : 1, &iov, 1, remote[i].addr,
                                        &remote[i].rkey, Done::cb, &done[i]);
            PT_CHECK(r >= 0);
            if (r == 0) done[i].done = true;
        }
        gp_xfer_round_end(n.engines[0]);
        auto t0 = Clock::now();
        for (size_t i = 0; i < k; ++i) {
            while (!done[i].done) {
                n.pump();
                PT_CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 20);
            }
            PT_CHECK(done[i].status == 0);
        }
        for (size_t i = 0; i < k; ++i) {
            if (!put) {
                // the got bytes sit past the skew: compare them there
                std::vector<uint8_t> h(slots[i].len + slots[i].skew);
                PT_CHECK(buf_read(local[i], h.data(), h.size()));
                PT_CHECK(first_mismatch(h.data() + slots[i].skew, slots[i].len, seed + i) ==
                         slots[i].len);
                for (size_t b = 0; b < slots[i].skew; ++b) PT_CHECK(h[b] == 0);
                // what the puts send next
                std::vector<uint8_t> f(slots[i].len + slots[i].skew, 0);
                fill_host(f.data() + slots[i].skew, slots[i].len, seed + 100 + i);
                PT_CHECK(buf_write(local[i], f.data(), f.size()));
            } else {
                PT_CHECK(remote_check(n, remote[i].addr, seed + 100 + i));
            }
        }
    }
    *after = n.eng()->stats();
    for (size_t i = 0; i < k; ++i) {
        PT_CHECK(remote_free(n, remote[i].addr));
        buf_free(local[i]);
    }
    return 0;
}

} // namespace

TEST_CASE("a round's device copies go in one launch per device", "[pipeline][sim][round]") {
    SKIP_WITHOUT_SIM();
    if (!gdrpipe::cuda::copy_kernel_built()) {
        WARN("built without the copy kernel (no nvcc): skipping");
        SUCCEED();
        return;
    }
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_DIRECT)})) return rc;
        gdrpipe::pipeline::XferStats s0, s1;
        // device 0 (same device as the remote buffers) and device 1 (its
        // peer): two launches a round; odd sizes and unaligned starts
        const std::vector<Slot> devs = {{kDev0, 1, 0},         {kDev0, 4095, 3},
                                        {kDev0, 65536 + 7, 8}, {kDev0, (1 << 20) + 3, 1},
                                        {kDev1, 12, 5},        {kDev1, 300000, 0}};
        if (int rc = round_trip(n, devs, 40, &s0, &s1)) return rc;
        std::fprintf(stderr, "device round: %s\n", gdrpipe::pipeline::format_stats(s1).c_str());
        PT_CHECK(s1.direct.xfers - s0.direct.xfers == 12);
        PT_CHECK(s1.copy_batches - s0.copy_batches == 4); // 2 devices x (gets, puts)
        PT_CHECK(s1.batched - s0.batched == 12);
        PT_CHECK(s1.fallbacks == s0.fallbacks && s1.failed == 0);

        // host memory is not the kernel's (pageable): the copy engine, at
        // once; the one device copy left alone in its round too
        const std::vector<Slot> mixed = {{kHost, 5000, 0}, {kDev0, 5000, 0}};
        if (int rc = round_trip(n, mixed, 60, &s0, &s1)) return rc;
        PT_CHECK(s1.direct.xfers - s0.direct.xfers == 4);
        PT_CHECK(s1.copy_batches == s0.copy_batches && s1.batched == s0.batched);

        // more copies than one launch holds: split into whole launches
        std::vector<Slot> many(GP_COPY_BATCH_MAX + 5, Slot{kDev0, 100, 0});
        if (int rc = round_trip(n, many, 80, &s0, &s1)) return rc;
        PT_CHECK(s1.batched - s0.batched == 2 * many.size());
        PT_CHECK(s1.copy_batches - s0.copy_batches == 4);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 90) == "");
}

namespace {

// A round of gets and puts over `slots` with engine config `c` (each local
// buffer its own device copy, on device 0 or 1) must copy one by one: no
// launch, no fallback, no failure, data checked by round_trip().
std::string one_by_one(gp_xfer_config_t c, const std::vector<Slot> &slots, uint64_t seed,
                       bool no_kernels) {
    auto a = [=](Node &n) -> int {
        if (no_kernels) ::setenv("GDRPIPE_SIM_NO_KERNELS", "1", 1); // every module load fails here
        if (int rc = node_setup(n, {c})) return rc;
        gdrpipe::pipeline::XferStats s0, s1;
        if (int rc = round_trip(n, slots, seed, &s0, &s1)) return rc;
        PT_CHECK(s1.direct.xfers - s0.direct.xfers == 2 * slots.size());
        PT_CHECK(s1.copy_batches == 0 && s1.batched == 0);
        PT_CHECK(s1.fallbacks == s0.fallbacks && s1.failed == 0);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    return run_pair(a, b, 60);
}

} // namespace

TEST_CASE("COPY_KERNEL=n: a round's copies go one by one", "[pipeline][sim][round]") {
    SKIP_WITHOUT_SIM();
    gp_xfer_config_t c = config(GP_PATH_DIRECT);
    c.no_copy_kernel = 1;
    REQUIRE(one_by_one(c, {{kDev0, 4096, 0}, {kDev0, 70000, 1}, {kDev0, 5, 0}}, 30, false) == "");
}

TEST_CASE("a device without the copy kernel copies a round one by one", "[pipeline][sim][round]") {
    SKIP_WITHOUT_SIM();
    REQUIRE(one_by_one(config(GP_PATH_DIRECT), {{kDev0, 4096, 0}, {kDev0, 70000, 1}, {kDev1, 33, 2}},
                       20, true) == "");
}
