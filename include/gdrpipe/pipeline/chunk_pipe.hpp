// The chunk pipeline of a staged transfer, shared by every wire
// (docs/data-paths.md "Chunk pipeline"; docs/rdma.md "Transfers").
//
// A ChunkPipe owns one side of one staged transfer: it walks the local
// memory (one or more segments, host or device) chunk by chunk, copies each
// chunk into a staging slot (producer: D2H / memcpy) or out of one
// (consumer: H2D / memcpy) asynchronously through a ChunkCopier, tracks the
// copies in order, limits how many are in flight, and fails or aborts as a
// whole. Where the slots are and how a chunk reaches the other side is the
// wire's business, behind ChunkWire:
//
//   producer: acquire(i) -> a free slot for chunk i (none: out of depth or
//             credit, retried on the next step); the copy local -> slot;
//             once it and every earlier one completed, ship(i) (false: the
//             wire cannot take it now, retried in order); done when all
//             chunks are shipped and, with wait_drain, drained(n) says the
//             other side took them all;
//   consumer: landed(j) -> the slot chunk j arrived in (false: not yet);
//             the copy slot -> local; once it and every earlier one
//             completed, release(j, slot, 0) gives the slot back; done when
//             all chunks are released.
//
// The shared-memory ring (ring.hpp: produced/consumed counters) and the RDMA
// wire (WRITE WITH IMM on ship, CREDIT on release, landed from the imm) are
// the two ChunkWire implementations.
//
// Threading: one thread steps a pipe; copiers may complete on any thread.
#pragma once

#include "gdrpipe/cuda/host_pin.hpp"
#include "gdrpipe/pipeline/local_mem.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace gdrpipe::pipeline {

// One staging slot as the wire names it.
struct ChunkSlot {
    char *p = nullptr;
    std::uint32_t id = 0; // the wire's slot number
};

class ChunkWire {
public:
    virtual ~ChunkWire() = default;
    // 0, or -errno when the other side or the wire gave up (*why filled):
    // the pipe fails with it.
    virtual int aborted(std::string *why) = 0;

    // --- producer
    virtual bool acquire(std::uint64_t chunk, ChunkSlot *slot) {
        (void)chunk;
        (void)slot;
        return false;
    }
    // An acquired slot that will not be shipped (the pipe failed or aborted).
    virtual void unacquire(const ChunkSlot &slot) { (void)slot; }
    virtual bool ship(std::uint64_t chunk, const ChunkSlot &slot, std::size_t len) {
        (void)chunk;
        (void)slot;
        (void)len;
        return false;
    }
    // Every one of the `nchunks` shipped chunks has been taken over.
    virtual bool drained(std::uint64_t nchunks) {
        (void)nchunks;
        return true;
    }

    // --- consumer
    virtual bool landed(std::uint64_t chunk, ChunkSlot *slot) {
        (void)chunk;
        (void)slot;
        return false;
    }
    // status 0: copied out; <0: not copied (the pipe failed or aborted).
    virtual void release(std::uint64_t chunk, const ChunkSlot &slot, int status) {
        (void)chunk;
        (void)slot;
        (void)status;
    }
};

// The copy of one chunk piece by piece; a copier keeps its state here.
struct CopyJob {
    Tokens toks;             // StreamCopier: the CUDA events of its pieces
    std::uint64_t ticket = 0; // other copiers
};

class ChunkCopier {
public:
    virtual ~ChunkCopier() = default;
    // Starts copying local [off, off+n) into `slot` (to_slot) or back.
    // Not ok: nothing of it is pending once wait(job) returned.
    virtual cuda::Status start(const LocalMem &m, std::size_t off, std::size_t n, char *slot,
                               bool to_slot, CopyJob *job) = 0;
    // 1 done, 0 pending, -1 failed (*why filled).
    virtual int poll(CopyJob *job, std::string *why) = 0;
    // Blocks until the job completed (errors dropped).
    virtual void wait(CopyJob *job) noexcept = 0;
};

// The core's copies (copy_local): memcpy between host pieces, else
// cuMemcpyAsync on stream slot `stream_slot` of the device doing the copy,
// completed by its event (copies of one stream complete in order).
class StreamCopier final : public ChunkCopier {
public:
    explicit StreamCopier(unsigned stream_slot) : slot_(stream_slot) {}
    cuda::Status start(const LocalMem &m, std::size_t off, std::size_t n, char *slot,
                       bool to_slot, CopyJob *job) override;
    int poll(CopyJob *job, std::string *why) override;
    void wait(CopyJob *job) noexcept override;

private:
    unsigned slot_;
};

class ChunkPipe {
public:
    enum class Role { producer, consumer };

    // len bytes of `mem` in chunks of `chunk` bytes, at most `depth` copies
    // in flight. wire and copier must outlive the pipe's last step/abort.
    void init(Role role, ChunkWire *wire, ChunkCopier *copier, LocalMem mem, std::size_t chunk,
              unsigned depth, bool wait_drain = false);

    // Issues what the wire allows, retires completed copies in order.
    // 1 done, 0 in progress, <0 failed (-EIO: a copy failed; else the
    // wire's code); *busy: something moved. After a failure the pipe has
    // already aborted (abort() is a no-op).
    int step(bool *busy, std::string *why);
    // Waits for the copies in flight, hands their slots back to the wire
    // (unacquire / release with -ECANCELED). Safe to call more than once.
    void abort() noexcept;

    Role role() const noexcept { return role_; }
    std::size_t len() const noexcept { return mem_.len; }
    std::size_t chunk() const noexcept { return chunk_; }
    std::uint64_t nchunks() const noexcept { return nchunks_; }
    std::uint64_t issued() const noexcept { return next_issue_; }
    std::uint64_t completed() const noexcept { return next_done_; } // shipped / released
    std::size_t in_flight() const noexcept { return inflight_.size(); }
    std::size_t chunk_len(std::uint64_t i) const noexcept;

private:
    struct Flight {
        std::uint64_t chunk = 0;
        ChunkSlot slot;
        CopyJob job;
        bool copied = false;
    };
    int fail(int code, const std::string &msg, std::string *why);

    Role role_ = Role::producer;
    ChunkWire *wire_ = nullptr;
    ChunkCopier *copier_ = nullptr;
    LocalMem mem_;
    std::size_t chunk_ = 0;
    unsigned depth_ = 1;
    bool wait_drain_ = false;
    std::uint64_t nchunks_ = 0;
    std::uint64_t next_issue_ = 0;
    std::uint64_t next_done_ = 0;
    std::deque<Flight> inflight_; // chunk order; producer: copied ones wait here to ship
    bool failed_ = false;
};

// LocalMem of one contiguous range (classified like classify()).
bool classify_one(void *p, std::size_t len, LocalMem *out);

// Staging slots pinned for the chunk copies (cuda/host_pin.hpp).
using HostPin = cuda::HostPin;

} // namespace gdrpipe::pipeline
