// Staging rings of the host-staged pipeline (docs/data-paths.md).
//
// A requester owns, per peer, one memfd-backed segment holding `nrings`
// rings; each ring is a header plus `depth` slots of `chunk` bytes. The peer
// (the owner of the remote buffer) maps the same segment through
// /proc/<pid>/fd/<fd>. Both sides pin their mapping (cuMemHostRegister) once.
//
// Per transfer a ring is a single-producer / single-consumer pipe:
//   producer: chunk i goes to slot i % depth once i - consumed < depth; when
//             the copy into the slot completed, produced = i + 1 (release);
//   consumer: chunk j is ready when produced > j (acquire); when the copy
//             out of the slot completed, consumed = j + 1 (release).
// Either side stores a nonzero `error` to abort (the owner ESTALE for a
// buffer freed in flight: nothing served); xfer_id names the transfer
// the ring currently serves (written by the requester before it asks).
#pragma once

#include "gdrpipe/pipeline/chunk_pipe.hpp"

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gdrpipe::pipeline {

inline constexpr uint32_t kSegMagic = 0x67707367; // "gspg"
inline constexpr uint32_t kSegVersion = 1;
inline constexpr size_t kMinChunk = size_t{64} << 10;
inline constexpr unsigned kMaxDepth = 64;
inline constexpr unsigned kMaxRings = 64;
// A peer's segment is pinned here only up to this size; a larger one is
// mapped but left pageable (its copies are slower): a requester cannot make
// its owner lock more memory than this (review M5). Segments the requesters
// of this version make by default are at most 128 MiB (4 rings, at most
// 32 MiB each when calibrated; 2 MiB x 4 otherwise).
inline constexpr size_t kPinAttachedMax = size_t{256} << 20;

struct SegHeader {
    uint32_t magic;
    uint32_t version;
    uint64_t seg_id;      // random; must match the control message
    uint64_t size;        // bytes of the whole segment
    uint64_t chunk;
    uint64_t ring_stride; // bytes from one ring header to the next
    uint32_t nrings;
    uint32_t depth;
    int32_t owner_pid;    // the requester that created it
};

struct RingHeader {
    alignas(64) std::atomic<uint64_t> xfer_id;  // 0: idle
    alignas(64) std::atomic<uint64_t> produced; // chunks ready in slots
    alignas(64) std::atomic<uint64_t> consumed; // chunks drained
    alignas(64) std::atomic<int32_t> error;     // nonzero: aborted
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline constexpr size_t kSegHeaderBytes = 4096;
inline constexpr size_t kRingHeaderBytes = 4096;

// A mapped staging segment (created here, or a peer's mapped here).
class StagingSegment {
public:
    // New segment for `nrings` rings of `depth` x `chunk` (chunk: multiple of 64 KiB).
    static std::unique_ptr<StagingSegment> create(unsigned nrings, unsigned depth,
                                                  size_t chunk, std::string *err);
    // Maps the segment of process `pid` (its fd `fd`), checking the header;
    // pins it when it is at most kPinAttachedMax bytes.
    static std::unique_ptr<StagingSegment> attach(pid_t pid, int fd, uint64_t seg_id,
                                                  uint64_t size, std::string *err);
    ~StagingSegment();
    StagingSegment(const StagingSegment &) = delete;
    StagingSegment &operator=(const StagingSegment &) = delete;

    // The shape as created or as checked at attach. The shared SegHeader is
    // never read again: the other process may rewrite it at any time.
    unsigned nrings() const noexcept { return nrings_; }
    unsigned depth() const noexcept { return depth_; }
    size_t chunk() const noexcept { return chunk_; }
    int fd() const noexcept { return fd_; }
    uint64_t seg_id() const noexcept { return seg_id_; }
    size_t size() const noexcept { return size_; }
    bool pinned() const noexcept { return pin_.pinned(); }
    // Ring i < nrings() and its slots, inside the mapping.
    RingHeader *ring(unsigned i) const noexcept;
    char *slot(unsigned ring, uint64_t chunk_index) const noexcept;

private:
    StagingSegment() = default;
    int fd_ = -1;
    void *map_ = nullptr;
    size_t size_ = 0;
    uint64_t seg_id_ = 0;
    unsigned nrings_ = 0;
    unsigned depth_ = 1;
    size_t chunk_ = 0;
    size_t ring_stride_ = 0;
    HostPin pin_;
};

// Bytes of a segment for this shape (0 when the shape is invalid).
size_t segment_bytes(unsigned nrings, unsigned depth, size_t chunk) noexcept;

// One ring as the wire of a ChunkPipe (chunk_pipe.hpp): chunk i lives in
// slot i % depth; acquire while i - consumed < depth, ship = produced = i + 1,
// landed while produced > j, release = consumed = j + 1, drained once
// consumed == n (release/acquire ordering on the counters). Aborted when the
// ring's error is set (-EIO; ESTALE, set by the owner when the buffer it was
// asked to serve was freed in flight: -ESTALE) or, with check_id, when
// xfer_id no longer names this transfer (-ECANCELED).
class RingWire final : public ChunkWire {
public:
    void reset(StagingSegment *seg, unsigned ring, uint64_t xfer_id, bool check_id) noexcept;
    RingHeader *ring() const noexcept { return ring_; }
    uint64_t xfer_id() const noexcept { return xfer_id_; }

    int aborted(std::string *why) override;
    bool acquire(uint64_t chunk, ChunkSlot *slot) override;
    bool ship(uint64_t chunk, const ChunkSlot &slot, size_t len) override;
    bool drained(uint64_t nchunks) override;
    bool landed(uint64_t chunk, ChunkSlot *slot) override;
    void release(uint64_t chunk, const ChunkSlot &slot, int status) override;

private:
    StagingSegment *seg_ = nullptr;
    unsigned ring_idx_ = 0;
    RingHeader *ring_ = nullptr;
    uint64_t xfer_id_ = 0;
    uint64_t depth_ = 1;
    bool check_id_ = false;
};

} // namespace gdrpipe::pipeline
