// Staging segments: memfd creation, attaching a peer's, pinning; a ring as a chunk-pipe wire.
#include "gdrpipe/pipeline/ring.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/wire/sealed_memfd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace gdrpipe::pipeline {

size_t segment_bytes(unsigned nrings, unsigned depth, size_t chunk) noexcept {
    if (nrings == 0 || nrings > kMaxRings || depth == 0 || depth > kMaxDepth ||
        chunk < kMinChunk || chunk % kMinChunk != 0 || chunk > (size_t{1} << 30)) {
        return 0;
    }
    return kSegHeaderBytes + size_t(nrings) * (kRingHeaderBytes + size_t(depth) * chunk);
}

RingHeader *StagingSegment::ring(unsigned i) const noexcept {
    auto *base = static_cast<char *>(map_) + kSegHeaderBytes + size_t(i) * ring_stride_;
    return reinterpret_cast<RingHeader *>(base);
}

char *StagingSegment::slot(unsigned r, uint64_t chunk_index) const noexcept {
    auto *base = reinterpret_cast<char *>(ring(r)) + kRingHeaderBytes;
    return base + (chunk_index % depth_) * chunk_;
}

std::unique_ptr<StagingSegment> StagingSegment::create(unsigned nrings, unsigned depth,
                                                       size_t chunk, std::string *err) {
    size_t size = segment_bytes(nrings, depth, chunk);
    if (size == 0) {
        *err = "invalid staging ring shape";
        return nullptr;
    }
    std::unique_ptr<StagingSegment> s(new StagingSegment());
    s->fd_ = wire::create_sealed_memfd("gdrpipe-stage", size, err);
    if (s->fd_ < 0) {
        return nullptr;
    }
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
    if (p == MAP_FAILED) {
        *err = std::string("mmap: ") + std::strerror(errno);
        return nullptr;
    }
    s->map_ = p;
    s->size_ = size;
    uint64_t id = 0;
    if (::getrandom(&id, sizeof(id), 0) != sizeof(id) || id == 0) {
        id = (uint64_t(::getpid()) << 32) ^ reinterpret_cast<uintptr_t>(p) ^ 0x5bd1e995u;
    }
    s->seg_id_ = id;
    s->nrings_ = nrings;
    s->depth_ = depth;
    s->chunk_ = chunk;
    s->ring_stride_ = kRingHeaderBytes + size_t(depth) * chunk;
    auto *h = static_cast<SegHeader *>(p);
    h->seg_id = id;
    h->size = size;
    h->chunk = chunk;
    h->ring_stride = s->ring_stride_;
    h->nrings = nrings;
    h->depth = depth;
    h->owner_pid = ::getpid();
    for (unsigned i = 0; i < nrings; ++i) {
        RingHeader *r = new (s->ring(i)) RingHeader;
        r->xfer_id.store(0, std::memory_order_relaxed);
        r->produced.store(0, std::memory_order_relaxed);
        r->consumed.store(0, std::memory_order_relaxed);
        r->error.store(0, std::memory_order_relaxed);
    }
    h->version = kSegVersion;
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kSegMagic;
    s->pin_.pin(s->map_, s->size_, "staging ring");
    return s;
}

std::unique_ptr<StagingSegment> StagingSegment::attach(pid_t pid, int fd, uint64_t seg_id,
                                                       uint64_t size, std::string *err) {
    if (pid <= 0 || fd < 0 || size < kSegHeaderBytes || size > (uint64_t{1} << 40)) {
        *err = "invalid staging segment reference";
        return nullptr;
    }
    std::unique_ptr<StagingSegment> s(new StagingSegment());
    s->fd_ = wire::open_peer_segment(pid, fd, err);
    if (s->fd_ < 0) {
        return nullptr;
    }
    struct stat st;
    if (::fstat(s->fd_, &st) != 0 || uint64_t(st.st_size) != size) {
        *err = "staging segment size mismatch";
        return nullptr;
    }
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd_, 0);
    if (p == MAP_FAILED) {
        *err = std::string("mmap: ") + std::strerror(errno);
        return nullptr;
    }
    s->map_ = p;
    s->size_ = size;
    // one private copy of the header: checked, then the only source of the
    // shape (the requester can rewrite the shared one at any time)
    SegHeader h;
    std::memcpy(&h, p, sizeof(h));
    if (h.magic != kSegMagic || h.version != kSegVersion || h.seg_id != seg_id ||
        h.size != size || h.owner_pid != pid ||
        segment_bytes(h.nrings, h.depth, h.chunk) != size ||
        h.ring_stride != kRingHeaderBytes + size_t(h.depth) * h.chunk) {
        *err = "staging segment header mismatch";
        return nullptr;
    }
    s->seg_id_ = h.seg_id;
    s->nrings_ = h.nrings;
    s->depth_ = h.depth;
    s->chunk_ = h.chunk;
    s->ring_stride_ = h.ring_stride;
    if (size <= kPinAttachedMax) {
        s->pin_.pin(s->map_, s->size_, "staging ring");
    } else {
        GP_DEBUG("staging segment of pid %d: %zu MiB, more than the %zu MiB pinned for a "
                 "peer: left pageable", int(pid), size_t(size >> 20), kPinAttachedMax >> 20);
    }
    return s;
}

StagingSegment::~StagingSegment() {
    pin_.unpin(); // before the unmap
    if (map_ != nullptr) ::munmap(map_, size_);
    if (fd_ >= 0) ::close(fd_);
}

void RingWire::reset(StagingSegment *seg, unsigned ring, uint64_t xfer_id,
                     bool check_id) noexcept {
    seg_ = seg;
    ring_idx_ = ring;
    ring_ = seg->ring(ring);
    xfer_id_ = xfer_id;
    depth_ = seg->depth();
    check_id_ = check_id;
}

int RingWire::aborted(std::string *why) {
    if (check_id_ && ring_->xfer_id.load(std::memory_order_acquire) != xfer_id_) {
        *why = "ring taken over by another transfer";
        return -ECANCELED;
    }
    const int32_t e = ring_->error.load(std::memory_order_acquire);
    if (e == ESTALE) {
        *why = "the owner's buffer was freed while the transfer was in flight";
        return -ESTALE;
    }
    if (e != 0) {
        *why = "the other side aborted";
        return -EIO;
    }
    return 0;
}

bool RingWire::acquire(uint64_t chunk, ChunkSlot *slot) {
    const uint64_t consumed = ring_->consumed.load(std::memory_order_acquire);
    if (chunk - std::min(consumed, chunk) >= depth_) return false;
    slot->p = seg_->slot(ring_idx_, chunk);
    slot->id = uint32_t(chunk % depth_);
    return true;
}

bool RingWire::ship(uint64_t chunk, const ChunkSlot &, size_t) {
    ring_->produced.store(chunk + 1, std::memory_order_release);
    return true;
}

bool RingWire::drained(uint64_t nchunks) {
    return ring_->consumed.load(std::memory_order_acquire) >= nchunks;
}

bool RingWire::landed(uint64_t chunk, ChunkSlot *slot) {
    if (ring_->produced.load(std::memory_order_acquire) <= chunk) return false;
    slot->p = seg_->slot(ring_idx_, chunk);
    slot->id = uint32_t(chunk % depth_);
    return true;
}

void RingWire::release(uint64_t chunk, const ChunkSlot &, int status) {
    if (status == 0) ring_->consumed.store(chunk + 1, std::memory_order_release);
}

} // namespace gdrpipe::pipeline
