// Multi-producer / single-consumer message FIFO in a shared-memory segment.
//
// The receiving interface owns the segment (a memfd: it disappears with the
// last process that maps it, so nothing is left in /dev/shm even after a
// crash). Senders in other processes map it through /proc/<pid>/fd/<fd> and
// append elements; the owner consumes them in order from its progress loop.
//
// Ordering protocol (per element i, slot i % n):
//   producer: CAS head h -> h+1 (only while h - tail < n), write the payload,
//             then store seq = h + 1 with release semantics;
//   consumer: element i is ready when seq == i + 1 (acquire); after handling
//             it, store tail = i + 1 (release), which frees the slot.
// The sequence number makes a slot's readiness unambiguous across laps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gdrpipe::wire {

inline constexpr uint32_t kShmMagic = 0x67647270;   // "gdrp"
inline constexpr uint16_t kShmVersion = 1;
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
    alignas(64) std::atomic<uint64_t> head;   // next index to reserve
    alignas(64) std::atomic<uint64_t> tail;   // next index the consumer frees
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
    bool peek(Message *msg) const noexcept;   // next ready element, if any
    void release() noexcept;                  // frees the element peek returned
    uint64_t read_index() const noexcept { return read_idx_; }

private:
    ElemHeader *elem(uint64_t index) const noexcept {
        return reinterpret_cast<ElemHeader *>(elems_ + (index & mask_) * elem_size_);
    }
    FifoHeader *hdr_ = nullptr;
    uint8_t *elems_ = nullptr;
    uint64_t mask_ = 0;
    uint32_t num_elems_ = 0;
    uint32_t elem_size_ = 0;
    uint64_t read_idx_ = 0;
};

} // namespace gdrpipe::wire
