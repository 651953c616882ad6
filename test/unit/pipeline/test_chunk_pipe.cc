// The wire-agnostic chunk pipeline (chunk_pipe.hpp) over the shared-memory
// ring (RingWire) and over a recording wire, in one process. The RDMA wire's
// side is exercised through TransferEngine in test/unit/rdma
// (test_transfer_staged.cc, tag [pipe]).
#include "gdrpipe/pipeline/chunk_pipe.hpp"
#include "gdrpipe/pipeline/ring.hpp"

#include "../cuda/sim_fixture.hpp"

#include "gp_catch.hpp"

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

using namespace gdrpipe;
using namespace gdrpipe::pipeline;

namespace {

constexpr size_t kChunk = kMinChunk; // 64 KiB

std::vector<char> pattern(size_t n, unsigned seed) {
    std::vector<char> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto &b : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = char(x);
    }
    return v;
}

// Host memory cut into segments of the given sizes out of one buffer.
LocalMem segments(std::vector<char> &buf, std::initializer_list<size_t> sizes) {
    LocalMem m;
    size_t off = 0;
    for (size_t n : sizes) {
        m.segs.push_back({buf.data() + off, n, -1});
        off += n;
    }
    m.len = off;
    REQUIRE(off == buf.size());
    return m;
}

// Copies at start (host memory) but completes only when the test says so;
// job `fail_at` (0-based) reports a failure.
class ManualCopier final : public ChunkCopier {
public:
    cuda::Status start(const LocalMem &m, size_t off, size_t n, char *slot, bool to_slot,
                       CopyJob *job) override {
        if (refuse_at == started) {
            ++started;
            return {CUDA_ERROR_INVALID_VALUE, "refused (test)"};
        }
        Tokens none;
        REQUIRE(copy_local(m, off, n, slot, -1, to_slot, 0, none).ok());
        job->ticket = ++started;
        state[job->ticket] = 0;
        return {};
    }
    int poll(CopyJob *job, std::string *why) override {
        ++polls;
        const int s = state.at(job->ticket);
        if (s == 0) return 0;
        if (s < 0) *why = "copy failed (test)";
        return s;
    }
    void wait(CopyJob *job) noexcept override {
        ++waits;
        state[job->ticket] = 1;
    }
    // Completes every job started so far (job fail_at fails).
    void complete_all() {
        for (auto &[t, s] : state) {
            if (s == 0) s = (t == fail_at + 1) ? -1 : 1;
        }
    }
    std::map<uint64_t, int> state; // ticket -> 0 pending, 1 done, -1 failed
    uint64_t started = 0;
    uint64_t fail_at = UINT64_MAX;
    uint64_t refuse_at = UINT64_MAX;
    int polls = 0, waits = 0;
};

// A wire with `credits` slots of its own, recording what the pipe does.
class RecordingWire final : public ChunkWire {
public:
    explicit RecordingWire(unsigned slots, size_t chunk) : store(size_t(slots) * chunk) {
        for (unsigned i = 0; i < slots; ++i) free.push_back(i);
        chunk_ = chunk;
    }
    int aborted(std::string *why) override {
        if (abort_code != 0) *why = "wire gave up (test)";
        return abort_code;
    }
    bool acquire(uint64_t, ChunkSlot *s) override {
        if (free.empty()) return false;
        s->id = free.back();
        free.pop_back();
        s->p = store.data() + s->id * chunk_;
        return true;
    }
    void unacquire(const ChunkSlot &s) override {
        free.push_back(s.id);
        ++unacquired;
    }
    bool ship(uint64_t chunk, const ChunkSlot &s, size_t len) override {
        if (!wire_open) return false;
        shipped.push_back(chunk);
        received.insert(received.end(), s.p, s.p + len);
        free.push_back(s.id); // the wire took it at once
        return true;
    }
    bool landed(uint64_t chunk, ChunkSlot *s) override {
        if (chunk >= arrived) return false;
        s->id = uint32_t(chunk % free_slots());
        s->p = store.data() + s->id * chunk_;
        return true;
    }
    void release(uint64_t chunk, const ChunkSlot &, int status) override {
        released.emplace_back(chunk, status);
    }
    size_t free_slots() const { return store.size() / chunk_; }

    std::vector<char> store;
    std::vector<unsigned> free;
    size_t chunk_ = 0;
    int abort_code = 0;
    bool wire_open = true;
    uint64_t arrived = 0;
    int unacquired = 0;
    std::vector<uint64_t> shipped;
    std::vector<char> received;
    std::vector<std::pair<uint64_t, int>> released;
};

// A requester-style producer and an owner-style consumer on ring 0.
struct RingPair {
    std::unique_ptr<StagingSegment> seg;
    RingWire pw, cw;
    ChunkPipe prod, cons;
    RingPair(unsigned depth, uint64_t id) {
        std::string err;
        seg = StagingSegment::create(1, depth, kChunk, &err);
        REQUIRE(seg);
        RingHeader *rh = seg->ring(0);
        rh->produced.store(0);
        rh->consumed.store(0);
        rh->error.store(0);
        rh->xfer_id.store(id);
        pw.reset(seg.get(), 0, id, false);
        cw.reset(seg.get(), 0, id, true);
    }
};

} // namespace

TEST_CASE("chunk pipe over a ring: multi-segment memory, depth-limited, in order",
          "[pipe][ring]") {
    // 10 chunks + a tail, cut at odd places on both sides
    auto src = pattern(10 * kChunk + 777, 1);
    std::vector<char> dst(src.size(), 0);
    RingPair rp(3, 42);
    ManualCopier pc;
    StreamCopier host_copies(2); // host memory: memcpy
    rp.prod.init(ChunkPipe::Role::producer, &rp.pw, &pc,
                 segments(src, {1000, 3 * kChunk + 5, 100, src.size() - 3 * kChunk - 1105}), kChunk,
                 3, /*wait_drain=*/true);
    rp.cons.init(ChunkPipe::Role::consumer, &rp.cw, &host_copies,
                 segments(dst, {kChunk - 1, 7, dst.size() - kChunk - 6}), kChunk, 3);
    REQUIRE(rp.prod.nchunks() == 11);
    std::string why;
    bool busy = false;
    // the depth bounds what is issued before anything completed
    CHECK(rp.prod.step(&busy, &why) == 0);
    CHECK(busy);
    CHECK(rp.prod.issued() == 3);
    CHECK(rp.prod.completed() == 0);
    CHECK(rp.seg->ring(0)->produced.load() == 0);
    // the consumer sees nothing yet
    CHECK(rp.cons.step(&busy, &why) == 0);
    CHECK(rp.cons.issued() == 0);
    // copies done: shipped in order; the ring is full (no consumer yet)
    pc.complete_all();
    CHECK(rp.prod.step(&busy, &why) == 0);
    CHECK(rp.prod.completed() == 3);
    CHECK(rp.seg->ring(0)->produced.load() == 3);
    CHECK(rp.prod.issued() == 3); // out of depth: no slot until consumed
    int rounds = 0;
    int pr = 0, cr = 0;
    while ((pr != 1 || cr != 1) && ++rounds < 100) {
        cr = rp.cons.step(&busy, &why);
        REQUIRE(cr >= 0);
        pc.complete_all();
        pr = rp.prod.step(&busy, &why);
        REQUIRE(pr >= 0);
        // never more than depth chunks between consumed and issued
        CHECK(rp.prod.issued() - rp.seg->ring(0)->consumed.load() <= 3);
    }
    CHECK(pr == 1);
    CHECK(cr == 1);
    CHECK(dst == src);
    CHECK(rp.seg->ring(0)->consumed.load() == 11);
}

TEST_CASE("chunk pipe over a ring: the producer waits for the drain", "[pipe][ring]") {
    auto src = pattern(2 * kChunk, 2);
    std::vector<char> dst(src.size(), 0);
    RingPair rp(4, 7);
    StreamCopier host_copies(2);
    rp.prod.init(ChunkPipe::Role::producer, &rp.pw, &host_copies, segments(src, {src.size()}),
                 kChunk, 4, /*wait_drain=*/true);
    std::string why;
    bool busy = false;
    CHECK(rp.prod.step(&busy, &why) == 0); // shipped both, not drained
    CHECK(rp.prod.completed() == 2);
    rp.cons.init(ChunkPipe::Role::consumer, &rp.cw, &host_copies, segments(dst, {dst.size()}),
                 kChunk, 4);
    CHECK(rp.cons.step(&busy, &why) == 1);
    CHECK(rp.prod.step(&busy, &why) == 1);
    CHECK(dst == src);
}

TEST_CASE("chunk pipe over a ring: a copy error mid-stream fails both sides", "[pipe][ring]") {
    auto src = pattern(8 * kChunk, 3);
    std::vector<char> dst(src.size(), 0);
    RingPair rp(2, 9);
    ManualCopier pc;
    pc.fail_at = 4; // the 5th chunk's D2H
    StreamCopier host_copies(3);
    rp.prod.init(ChunkPipe::Role::producer, &rp.pw, &pc, segments(src, {src.size()}), kChunk, 2,
                 true);
    rp.cons.init(ChunkPipe::Role::consumer, &rp.cw, &host_copies, segments(dst, {dst.size()}),
                 kChunk, 2);
    std::string why;
    bool busy = false;
    int pr = 0;
    for (int i = 0; i < 50 && pr == 0; ++i) {
        REQUIRE(rp.cons.step(&busy, &why) == 0);
        pc.complete_all();
        pr = rp.prod.step(&busy, &why);
    }
    CHECK(pr == -EIO);
    CHECK(why == "copy failed (test)");
    CHECK(rp.prod.completed() == 4);   // chunks 0..3 went out
    CHECK(rp.prod.in_flight() == 0);   // the failed pipe aborted its copies
    CHECK(std::memcmp(dst.data(), src.data(), 2 * kChunk) == 0); // what landed is right
    bool b2 = false;
    CHECK(rp.prod.step(&b2, &why) == -EIO); // stays failed
    // the engine tells the other side through the ring header
    rp.seg->ring(0)->error.store(EIO);
    int cr = 0;
    for (int i = 0; i < 5 && cr == 0; ++i) cr = rp.cons.step(&busy, &why);
    CHECK(cr == -EIO);
    CHECK(why == "the other side aborted");
}

TEST_CASE("chunk pipe over a ring: a ring taken over by another transfer cancels",
          "[pipe][ring]") {
    auto dst = std::vector<char>(kChunk, 0);
    RingPair rp(2, 5);
    StreamCopier host_copies(3);
    rp.cons.init(ChunkPipe::Role::consumer, &rp.cw, &host_copies, segments(dst, {dst.size()}),
                 kChunk, 2);
    rp.seg->ring(0)->xfer_id.store(6);
    std::string why;
    bool busy = false;
    CHECK(rp.cons.step(&busy, &why) == -ECANCELED);
    CHECK(why == "ring taken over by another transfer");
}

TEST_CASE("chunk pipe: out of slots and a wire that refuses to ship", "[pipe]") {
    auto src = pattern(5 * kChunk + 3, 4);
    RecordingWire w(2, kChunk);
    ManualCopier c;
    ChunkPipe p;
    p.init(ChunkPipe::Role::producer, &w, &c, segments(src, {kChunk + 1, src.size() - kChunk - 1}),
           kChunk, 8);
    std::string why;
    bool busy = false;
    CHECK(p.step(&busy, &why) == 0);
    CHECK(p.issued() == 2); // two slots, though the depth is 8
    w.wire_open = false;    // e.g. no peer credit
    c.complete_all();
    CHECK(p.step(&busy, &why) == 0);
    CHECK(p.completed() == 0);
    CHECK(p.issued() == 2);
    w.wire_open = true;
    for (int i = 0; i < 20 && p.completed() < p.nchunks(); ++i) {
        REQUIRE(p.step(&busy, &why) >= 0);
        c.complete_all();
    }
    CHECK(p.step(&busy, &why) == 1);
    CHECK(w.shipped == std::vector<uint64_t>{0, 1, 2, 3, 4, 5});
    CHECK(w.received == src);
}

namespace {

// One pipe over a 4-slot recording wire with a manual copier, started on
// `buf` and stepped once (the abort tests' common setup).
struct StartedPipe {
    RecordingWire w{4, kChunk};
    ManualCopier c;
    ChunkPipe p;
    std::string why;
    bool busy = false;
    int first_step = 0;
    StartedPipe(ChunkPipe::Role role, std::vector<char> &buf, int arrived = 0) {
        w.arrived = arrived;
        p.init(role, &w, &c, segments(buf, {buf.size()}), kChunk, 4);
        first_step = p.step(&busy, &why);
    }
    int step() { return p.step(&busy, &why); }
};

} // namespace

TEST_CASE("chunk pipe: abort waits for the copies and hands the slots back", "[pipe]") {
    auto buf = pattern(6 * kChunk, 5);
    SECTION("producer") {
        StartedPipe t(ChunkPipe::Role::producer, buf);
        CHECK(t.first_step == 0);
        CHECK(t.p.in_flight() == 4);
        CHECK(t.w.free.empty());
        t.p.abort();
        CHECK(t.c.waits == 4);
        CHECK(t.w.unacquired == 4);
        CHECK(t.w.free.size() == 4);
        CHECK(t.p.in_flight() == 0);
        t.p.abort(); // again: nothing left
        CHECK(t.c.waits == 4);
    }
    SECTION("consumer") {
        StartedPipe t(ChunkPipe::Role::consumer, buf, 3);
        CHECK(t.first_step == 0);
        CHECK(t.p.in_flight() == 3);
        t.p.abort();
        CHECK(t.c.waits == 3);
        REQUIRE(t.w.released.size() == 3);
        for (uint64_t i = 0; i < 3; ++i) {
            CHECK(t.w.released[i] == std::make_pair(i, -ECANCELED));
        }
    }
    SECTION("the wire gives up: the pipe fails with its code and aborts") {
        StartedPipe t(ChunkPipe::Role::producer, buf);
        CHECK(t.first_step == 0);
        t.w.abort_code = -ECONNRESET;
        CHECK(t.step() == -ECONNRESET);
        CHECK(t.why == "wire gave up (test)");
        CHECK(t.w.unacquired == 4);
        CHECK(t.c.waits == 4);
    }
}

TEST_CASE("chunk pipe: a copy refused at start fails the pipe, its slot goes back", "[pipe]") {
    auto buf = pattern(4 * kChunk, 6);
    RecordingWire w(4, kChunk);
    w.arrived = 4;
    ManualCopier c;
    c.refuse_at = 2;
    ChunkPipe p;
    p.init(ChunkPipe::Role::consumer, &w, &c, segments(buf, {buf.size()}), kChunk, 4);
    std::string why;
    bool busy = false;
    CHECK(p.step(&busy, &why) == -EIO);
    CHECK(why == "refused (test)");
    // chunk 2 released with the error, 0 and 1 (in flight) cancelled
    REQUIRE(w.released.size() == 3);
    CHECK(w.released[0] == std::make_pair(uint64_t{2}, -EIO));
    CHECK(w.released[1] == std::make_pair(uint64_t{0}, -ECANCELED));
    CHECK(w.released[2] == std::make_pair(uint64_t{1}, -ECANCELED));
}

TEST_CASE("chunk pipe over a ring on simulated device memory: D2H overlaps the wire",
          "[pipe][ring][cudasim]") {
    GP_REQUIRE_SIM();
    {
        // the overlap is observed through the simulator's 30 ms D2H
        const char *lib = std::getenv("UCX_GDRPIPE_CUDA_LIB");
        if (lib == nullptr || std::strstr(lib, "cudasim") == nullptr) {
            WARN("needs the simulator's timing model: skipped on a real driver");
            return;
        }
    }
    using cuda::test::DevBuf;
    // source: device memory on GPU 0 then a host tail; destination on GPU 1
    const size_t dev_part = 4 * kChunk, host_part = 2 * kChunk + 9, n = dev_part + host_part;
    auto want = pattern(n, 7);
    DevBuf s0(0, dev_part), d1(1, n);
    REQUIRE(cuda::copy(s0.p(), want.data(), dev_part).ok());
    std::vector<char> host_tail(want.begin() + long(dev_part), want.end());
    LocalMem src;
    src.segs.push_back({static_cast<char *>(s0.p()), dev_part, 0});
    src.segs.push_back({host_tail.data(), host_part, -1});
    src.len = n;
    src.all_host = false;
    src.dev = 0;
    LocalMem dst;
    dst.segs.push_back({static_cast<char *>(d1.p()), n, 1});
    dst.len = n;
    dst.all_host = false;
    dst.dev = 1;
    RingPair rp(3, 11);
    StreamCopier out(2), in(3);
    rp.prod.init(ChunkPipe::Role::producer, &rp.pw, &out, src, kChunk, 3, true);
    rp.cons.init(ChunkPipe::Role::consumer, &rp.cw, &in, dst, kChunk, 3);
    std::string why;
    bool busy = false;
    REQUIRE(rp.prod.step(&busy, &why) == 0);
    // the simulator's D2H takes 30 ms: three chunks issued, none landed yet
    CHECK(rp.prod.issued() == 3);
    CHECK(rp.prod.completed() == 0);
    int pr = 0, cr = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((pr != 1 || cr != 1) && std::chrono::steady_clock::now() < end) {
        cr = rp.cons.step(&busy, &why);
        REQUIRE(cr >= 0);
        pr = rp.prod.step(&busy, &why);
        REQUIRE(pr >= 0);
    }
    REQUIRE(pr == 1);
    REQUIRE(cr == 1);
    std::vector<char> got(n, 0);
    REQUIRE(cuda::copy(got.data(), d1.p(), n).ok());
    CHECK(got == want);
}
