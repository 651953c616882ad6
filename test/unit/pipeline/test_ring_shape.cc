// A staging segment's shape (nrings, depth, chunk, ring stride) is checked
// once, when the segment is created or attached; afterwards the shared header
// may hold anything (the other process maps it read-write). Rings and slots
// must stay where the checked shape put them, inside the mapping.
#include "gdrpipe/pipeline/ring.hpp"

#include "gp_catch.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

using namespace gdrpipe::pipeline;

namespace {

constexpr unsigned kRings = 4, kDepth = 2;
constexpr size_t kChunk = kMinChunk;

// addresses as numbers (Catch would print a char * as a string)
struct Layout {
    std::vector<uintptr_t> rings, slots;
};

Layout layout_of(const StagingSegment &s) {
    Layout l;
    for (unsigned r = 0; r < kRings; ++r) {
        l.rings.push_back(reinterpret_cast<uintptr_t>(s.ring(r)));
        for (uint64_t c = 0; c < 2 * kDepth; ++c) {
            l.slots.push_back(reinterpret_cast<uintptr_t>(s.slot(r, c)));
        }
    }
    return l;
}

// Every ring header and every slot lies inside the segment's mapping.
bool inside(const StagingSegment &s, const Layout &l) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(s.ring(0)) - kSegHeaderBytes;
    const uintptr_t hi = lo + s.size();
    for (uintptr_t r : l.rings) {
        if (r < lo + kSegHeaderBytes || r > hi - kRingHeaderBytes) return false;
    }
    for (uintptr_t p : l.slots) {
        if (p < lo + kSegHeaderBytes || p > hi - kChunk) return false;
    }
    return true;
}

} // namespace

TEST_CASE("staging segment: a rewritten shared header moves no ring and no slot",
          "[ring][security]") {
    std::string err;
    auto own = StagingSegment::create(kRings, kDepth, kChunk, &err);
    REQUIRE(own);
    // the owner's view: the same segment attached through /proc/<pid>/fd
    auto peer = StagingSegment::attach(::getpid(), own->fd(), own->seg_id(), own->size(), &err);
    REQUIRE(peer);
    const Layout before_own = layout_of(*own), before_peer = layout_of(*peer);
    REQUIRE(inside(*own, before_own));
    REQUIRE(inside(*peer, before_peer));

    // the other process writes the shared header through its own mapping
    void *p = ::mmap(nullptr, own->size(), PROT_READ | PROT_WRITE, MAP_SHARED, own->fd(), 0);
    REQUIRE(p != MAP_FAILED);
    auto *h = static_cast<SegHeader *>(p);
    h->chunk = size_t{1} << 30;
    h->depth = kMaxDepth;
    h->nrings = kMaxRings;
    h->ring_stride = uint64_t{1} << 40;

    for (const StagingSegment *s : {own.get(), peer.get()}) {
        const Layout now = layout_of(*s);
        CHECK(now.rings == (s == own.get() ? before_own : before_peer).rings);
        CHECK(now.slots == (s == own.get() ? before_own : before_peer).slots);
        CHECK(inside(*s, now));
        CHECK(s->nrings() == kRings);
        CHECK(s->depth() == kDepth);
        CHECK(s->chunk() == kChunk);
    }

    // a zero depth would divide by zero in slot()
    h->depth = 0;
    h->chunk = 0;
    CHECK(layout_of(*own).slots == before_own.slots);
    CHECK(layout_of(*peer).slots == before_peer.slots);

    // a ring wire takes the checked depth, not the header's
    RingWire w;
    w.reset(peer.get(), 1, 7, false);
    peer->ring(1)->consumed.store(0);
    ChunkSlot slot;
    CHECK(w.acquire(kDepth - 1, &slot));
    CHECK_FALSE(w.acquire(kDepth, &slot));
    ::munmap(p, own->size());
}

TEST_CASE("staging segment: a peer's segment is pinned only up to a bound", "[ring][security]") {
    std::string err;
    // the default shape: pinned by the owner that attaches it
    auto small = StagingSegment::create(kRings, kDepth, kChunk, &err);
    REQUIRE(small);
    auto small_peer =
        StagingSegment::attach(::getpid(), small->fd(), small->seg_id(), small->size(), &err);
    REQUIRE(small_peer);
    // 4 rings x 64 slots x 2 MiB = 512 MiB (sparse: never touched here): a
    // requester may make it, the owner must not lock it (review M5)
    auto big = StagingSegment::create(kRings, kMaxDepth, size_t{2} << 20, &err);
    REQUIRE(big);
    REQUIRE(big->size() > kPinAttachedMax);
    auto big_peer = StagingSegment::attach(::getpid(), big->fd(), big->seg_id(), big->size(), &err);
    REQUIRE(big_peer);
    if (!small_peer->pinned()) {
        WARN("no CUDA driver: nothing is pinned, the bound is not observable");
        return;
    }
    CHECK_FALSE(big_peer->pinned());
    CHECK(big_peer->ring(kRings - 1) != nullptr);
}
