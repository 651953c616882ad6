// Multi-producer / single-consumer message FIFO in a shared-memory segment.
//
// The receiving interface owns the segment (a memfd: it disappears with the
// last process that maps it, so nothing is left in /dev/shm even after a
// crash). Senders in other processes map it through /proc/<pid>/fd/<fd> and
// append elements; the owner consumes them in order from its progress loop.
//
// Ordering protocol (element i lives in slot i % n; each slot has one 64-bit
// state word `seq`: the state, the low 32 bits of an element index and, while
// claimed, the claiming producer's pid):
//   slot formatted / released:  free(i)        ready to take element i
//   producer:  CAS seq free(h) -> claimed(h, pid), then CAS head h -> h+1 (any
//              producer that finds slot h claimed or committed helps head on),
//              writes the payload, stores seq = committed(h) (release);
//   consumer:  element i is ready at committed(i) (acquire); after handling it
//              stores seq = free(i + n) (release), which hands the slot to the
//              producer of element i + n.
// A producer that dies between claim and commit leaves its pid in the slot:
// the consumer, finding its next element claimed for a long time (counted in
// polls, no clock), checks that pid and, when the process is gone, discards
// the element and goes on (before version 2 it waited forever). Whatever a
// producer writes into the shared words, reserve() gives up after a bounded
// number of steps and never hands out a slot outside the validated shape.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gdrpipe::wire {

inline constexpr uint32_t kShmMagic = 0x67647270;   // "gdrp"
inline constexpr uint16_t kShmVersion = 2;  // 2: claims name their producer
inline constexpr uint8_t kAmIdDiscard = 0xff;       // element carries no message

struct alignas(64) FifoHeader {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;
    int32_t owner_pid;
    uint32_t num_elems;      // power of two
    uint32_t elem_size;      // bytes per element including ElemHeader
    uint32_t reserved2;
    uint64_t seg_id;         // random; must match the connection address
    uint64_t owner_start_time;
    alignas(64) std::atomic<uint64_t> head;   // next index to reserve (a hint: the slots decide)
    alignas(64) std::atomic<uint64_t> tail;   // next index the consumer frees (information only)
    alignas(64) std::atomic<uint64_t> signal; // bumped by helpers wanting attention
};

struct alignas(16) ElemHeader {
    std::atomic<uint64_t> seq;
    uint32_t length;
    uint8_t am_id;
    uint8_t flags;
    uint16_t reserved;
};
static_assert(sizeof(ElemHeader) == 16);

// The shape of a FIFO as validated: a peer's header may change after the
// check, so the view is built from this copy, never from the header again.
struct FifoShape {
    uint32_t num_elems = 0;
    uint32_t elem_size = 0;
};

// View of a FIFO mapped at `base` (either side).
class Fifo {
public:
    Fifo() = default;
    // A segment whose shape is known: formatted here, or validated (the
    // shape validate() returned).
    Fifo(void *base, const FifoShape &shape) noexcept;
    // Takes the shape from the header (tests; a segment nobody else maps).
    Fifo(void *base, size_t mapped_size) noexcept;

    // Layout helpers.
    static size_t segment_size(uint32_t num_elems, uint32_t elem_size) noexcept;
    static void format(void *base, uint32_t num_elems, uint32_t elem_size,
                       int32_t owner_pid, uint64_t seg_id, uint64_t start_time) noexcept;
    // Checks a mapped segment's header before it is trusted (a peer's
    // segment may be garbage): returns nullptr or a reason. Each field is
    // read once; the shape checked is stored in *shape (when given).
    static const char *validate(const void *base, size_t mapped_size,
                                uint64_t expected_seg_id, FifoShape *shape = nullptr) noexcept;

    FifoHeader *header() const noexcept { return hdr_; }
    uint32_t max_payload() const noexcept { return elem_size_ - sizeof(ElemHeader); }

    // Producer side. Returns the payload area of a reserved element, or
    // nullptr when the FIFO is full. Every reservation must be committed.
    void *reserve(uint64_t *index) noexcept;
    void commit(uint64_t index, uint8_t am_id, uint32_t length) noexcept;
    bool has_space() const noexcept;

    // Consumer side.
    struct Message {
        uint8_t am_id;
        uint32_t length;
        void *data;
        bool corrupt;   // header claims more than an element holds
    };
    // Next ready element, if any. An element whose producer died between
    // reserve and commit comes back as a kAmIdDiscard element of length 0.
    bool peek(Message *msg) noexcept;
    void release() noexcept;                  // frees the element peek returned
    uint64_t read_index() const noexcept { return read_idx_; }
    // elements discarded because their producer died before committing
    uint64_t reclaimed() const noexcept { return reclaimed_; }
    // Polls of one element claimed but not committed before its producer's
    // liveness is checked (then again every as many polls).
    static constexpr uint32_t kClaimPollsBeforeCheck = 4096;

private:
    // reserve()'s end once slot e of element h is claimed: head moves on
    void *claimed(ElemHeader *e, uint64_t h, uint64_t *index) noexcept;
    // reserve()'s general case (the head's slot taken, or a FIFO full or
    // written by another hand), from head value h
    [[gnu::noinline]] void *reserve_slow(uint64_t h, uint32_t me, uint64_t *index) noexcept;
    // peek's slow path: the next element claimed, not committed; discards it
    // (true) once its producer is gone
    [[gnu::noinline]] bool reclaim(ElemHeader *e, uint64_t w) noexcept;
    ElemHeader *elem(uint64_t index) const noexcept {
        return reinterpret_cast<ElemHeader *>(elems_ + (index & mask_) * elem_size_);
    }
    FifoHeader *hdr_ = nullptr;
    uint8_t *elems_ = nullptr;
    uint64_t mask_ = 0;
    uint32_t num_elems_ = 0;
    uint32_t elem_size_ = 0;
    uint64_t read_idx_ = 0;
    uint32_t stuck_polls_ = 0;   // polls of read_idx_ while it was claimed
    uint64_t reclaimed_ = 0;
};

} // namespace gdrpipe::wire
