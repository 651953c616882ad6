// A hostile requester against the owner's staged path: it rewrites the shape
// in the header of its own staging segment after the owner attached it, then
// asks for a transfer in that shape. The owner must keep the shape it checked
// at attach time and drop the request.
#include "server.hpp"

#include "gdrpipe/pipeline/control.hpp"
#include "gdrpipe/pipeline/ring.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

#include <sys/mman.h>

using namespace pt;
using namespace gdrpipe::pipeline;

namespace {

void post(Node &n, const CtrlMsg &m) {
    uint64_t idx;
    void *buf = nullptr;
    while ((buf = gp_shm_reserve(n.peer, &idx)) == nullptr) n.pump();
    std::memcpy(buf, &m, sizeof(m));
    gp_shm_commit(n.peer, idx, GP_CTRL_AM_ID, sizeof(m));
}

CtrlMsg stage_out(const StagingSegment &seg, uint64_t xfer_id, uint32_t depth, uint64_t chunk,
                  uint64_t addr, uint64_t len, uint64_t token) {
    CtrlMsg m{};
    m.type = kStageOut;
    m.req_pid = getpid();
    m.seg_fd = seg.fd();
    m.req_start_time = gdrpipe::wire::process_start_time(getpid());
    m.seg_id = seg.seg_id();
    m.seg_size = seg.size();
    m.ring = 0;
    m.depth = depth;
    m.chunk = chunk;
    m.xfer_id = xfer_id;
    m.remote_addr = addr;
    m.length = len;
    m.token = token;
    ctrl_seal(m);
    return m;
}

void arm_ring(RingHeader *rh, uint64_t xfer_id) {
    rh->produced.store(0);
    rh->consumed.store(0);
    rh->error.store(0);
    rh->xfer_id.store(xfer_id);
}

} // namespace

TEST_CASE("hostile requester: a staging header rewritten after attach is not followed",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        const size_t kBuf = size_t{4} << 20;
        Reply r;
        PT_CHECK(remote_alloc(n, kHost, kBuf, 11, true, &r));
        // 4 rings x 1 slot x 64 KiB: a mapping of about 276 KiB in the owner
        std::string err;
        auto seg = StagingSegment::create(4, 1, kMinChunk, &err);
        PT_CHECK(seg != nullptr);
        RingHeader *rh = seg->ring(0);

        // an honest request first: the owner attaches and serves it
        arm_ring(rh, 1);
        post(n, stage_out(*seg, 1, 1, kMinChunk, r.addr, kMinChunk, r.rkey.token));
        auto t0 = Clock::now();
        while (rh->produced.load() < 1) {
            n.pump();
            PT_CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 20);
        }
        std::vector<uint8_t> want(kMinChunk);
        fill_host(want.data(), want.size(), 11);
        PT_CHECK(std::memcmp(seg->slot(0, 0), want.data(), want.size()) == 0);
        rh->consumed.store(1);

        // then the header says 1 GiB chunks, 64 deep, and a request in that shape
        void *p = ::mmap(nullptr, seg->size(), PROT_READ | PROT_WRITE, MAP_SHARED, seg->fd(), 0);
        PT_CHECK(p != MAP_FAILED);
        auto *h = static_cast<SegHeader *>(p);
        h->chunk = size_t{1} << 30;
        h->depth = kMaxDepth;
        h->ring_stride = kRingHeaderBytes + kMaxDepth * (size_t{1} << 30);
        arm_ring(rh, 2);
        post(n, stage_out(*seg, 2, kMaxDepth, size_t{1} << 30, r.addr, kBuf, r.rkey.token));
        t0 = Clock::now();
        while (std::chrono::duration<double>(Clock::now() - t0).count() < 0.3) n.pump();

        Cmd c;
        c.op = kStats;
        Reply s;
        PT_CHECK(call(n, c, &s)); // the owner is alive
        std::fprintf(stderr, "hostile ring: owner dropped %llu, served %llu\n",
                     static_cast<unsigned long long>(s.value),
                     static_cast<unsigned long long>(s.value2));
        PT_CHECK(s.value == 1);  // the reshaped request
        PT_CHECK(s.value2 == 1); // only the honest one
        PT_CHECK(rh->produced.load() == 0);
        PT_CHECK(remote_check(n, r.addr, 11));
        ::munmap(p, seg->size());
        seg.reset();

        // and the owner still serves well-formed transfers
        if (int rc = get_put(n, 0, kDev0, kHost, 300000, 12)) return rc;
        PT_CHECK(remote_free(n, r.addr));
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 30) == "");
}

// Review finding M1 (b): a staged transfer aborted after its control message
// went out retires its ring (the owner may still touch it). With every ring
// of a peer retired, later transfers to it used to queue forever; now the
// requester gives the segment up and makes a new one, and the owner lets
// the old one go when it attaches the new.
TEST_CASE("staged transfers refused by the owner do not use up the staging rings",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        const size_t len = 300000;
        Reply r;
        PT_CHECK(remote_alloc(n, kHost, len, 21, true, &r));
        PT_CHECK(remote_free(n, r.addr)); // the rkey stays, the owner's registration goes
        Buf l;
        PT_CHECK(buf_alloc(l, kDev0, len));
        // more refusals than there are rings: each one is an error, none hangs
        for (int i = 0; i < 6; ++i) {
            const int st = xfer(n, 0, true, l.p, len, r.addr, r.rkey, 10);
            PT_CHECK(st != 0 && st != -9999);
        }
        buf_free(l);
        // and transfers to that peer still run
        if (int rc = get_put(n, 0, kDev0, kHost, len, 22)) return rc;
        PT_CHECK(n.eng()->stats().segments_renewed >= 1);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 60) == "");
}

// Review finding M1 (c), the owner's side: a requester that stops consuming
// makes the owner give the transfer up after UCX_GDRPIPE_STALL_TIMEOUT
// (the ring's error set), and the owner goes on serving others.
TEST_CASE("a requester that stops consuming: the owner drops it after the stall timeout",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        const size_t kLen = 4 * kMinChunk;
        Reply r;
        PT_CHECK(remote_alloc(n, kHost, kLen, 13, true, &r));
        std::string err;
        auto seg = StagingSegment::create(1, 1, kMinChunk, &err);
        PT_CHECK(seg != nullptr);
        RingHeader *rh = seg->ring(0);
        arm_ring(rh, 1);
        post(n, stage_out(*seg, 1, 1, kMinChunk, r.addr, kLen, r.rkey.token));
        // the first chunk comes (unless the owner's copy itself was slower than
        // the timeout); it is never consumed
        auto t0 = Clock::now();
        while (rh->error.load() == 0) {
            n.pump();
            PT_CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 30);
        }
        std::fprintf(stderr, "stalled ring: produced %llu, error %d after %.2f s\n",
                     static_cast<unsigned long long>(rh->produced.load()), int(rh->error.load()),
                     std::chrono::duration<double>(Clock::now() - t0).count());
        PT_CHECK(rh->produced.load() <= 1);
        PT_CHECK(rh->error.load() == EIO);
        Cmd c;
        c.op = kStats;
        Reply s;
        PT_CHECK(call(n, c, &s));
        PT_CHECK(s.value2 == 0); // nothing served to its end
        seg.reset();
        if (int rc = get_put(n, 0, kDev0, kHost, 300000, 14)) return rc;
        PT_CHECK(remote_free(n, r.addr));
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) {
        gp_xfer_config_t c = config(GP_PATH_AUTO);
        c.stall_timeout_s = 0.3;
        return serve_main(n, {c});
    };
    REQUIRE(run_pair(a, b, 60) == "");
}

// Review finding M4: an address alone does not reach the owner's memory. A
// requester holding the remote key of one buffer names another registered
// buffer of the owner (or any buffer with no token): refused, the ring's
// error EACCES, nothing copied; with that buffer's own key it is served.
TEST_CASE("hostile requester: a staged request reaches only memory whose key it was given",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        Reply given, other;
        PT_CHECK(remote_alloc(n, kHost, kMinChunk, 15, true, &given));
        PT_CHECK(remote_alloc(n, kHost, kMinChunk, 16, true, &other));
        PT_CHECK(given.rkey.token != 0 && other.rkey.token != 0);
        PT_CHECK(given.rkey.token != other.rkey.token);
        std::string err;
        auto seg = StagingSegment::create(1, 1, kMinChunk, &err);
        PT_CHECK(seg != nullptr);
        RingHeader *rh = seg->ring(0);
        const uint64_t forged[] = {given.rkey.token, 0, other.rkey.token ^ 1};
        uint64_t id = 1;
        for (uint64_t token : forged) {
            arm_ring(rh, id);
            post(n, stage_out(*seg, id, 1, kMinChunk, other.addr, kMinChunk, token));
            auto t0 = Clock::now();
            while (rh->error.load() == 0) {
                n.pump();
                PT_CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 20);
            }
            PT_CHECK(rh->error.load() == EACCES);
            PT_CHECK(rh->produced.load() == 0);
            ++id;
        }
        // the honest request for the same range, with its own key
        arm_ring(rh, id);
        post(n, stage_out(*seg, id, 1, kMinChunk, other.addr, kMinChunk, other.rkey.token));
        auto t0 = Clock::now();
        while (rh->produced.load() < 1) {
            n.pump();
            PT_CHECK(rh->error.load() == 0);
            PT_CHECK(std::chrono::duration<double>(Clock::now() - t0).count() < 20);
        }
        std::vector<uint8_t> want(kMinChunk);
        fill_host(want.data(), want.size(), 16);
        PT_CHECK(std::memcmp(seg->slot(0, 0), want.data(), want.size()) == 0);
        rh->consumed.store(1);
        Cmd c;
        c.op = kStats;
        Reply s;
        PT_CHECK(call(n, c, &s));
        PT_CHECK(s.value == 3); // the three forged requests dropped
        seg.reset();
        PT_CHECK(remote_free(n, given.addr));
        PT_CHECK(remote_free(n, other.addr));
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 60) == "");
}

// Review finding M2 (in part): the owner's start time in the shared FIFO
// header can be rewritten by any producer. Read from there per transfer, a
// rewrite made every other producer take the owner for a new process and
// fail all transfers to it; now it is the kernel's, checked and kept at
// connect.
TEST_CASE("a producer that rewrites the owner's start time cuts nobody off",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_STAGED)})) return rc;
        if (int rc = get_put(n, 0, kDev0, kHost, 300000, 17)) return rc;
        auto *peer = reinterpret_cast<gdrpipe::wire::ShmPeer *>(n.peer);
        const uint64_t honest = peer->start_time();
        PT_CHECK(honest != 0);
        PT_CHECK(peer->fifo().header()->owner_start_time == honest);
        peer->fifo().header()->owner_start_time = honest + 12345; // the hostile write
        if (int rc = get_put(n, 0, kDev0, kHost, 300000, 18)) return rc;
        PT_CHECK(n.eng()->stats().peers_failed == 0);
        peer->fifo().header()->owner_start_time = honest;
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 60) == "");
}
