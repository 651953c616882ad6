#include "gdrpipe/wire/shm_fifo.hpp"

#include "gdrpipe/self_pid.hpp"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <new>

namespace gdrpipe::wire {

namespace {
bool is_pow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }
size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }
// one load of a field another process may be writing
template <class T> T load_once(const T &field) { return __atomic_load_n(&field, __ATOMIC_RELAXED); }

// The slot state word: state (2 bits) | pid (30 bits) | element index (low 32 bits).
enum : uint64_t { kFree = 0, kClaimed = 1, kCommitted = 2 };
constexpr uint64_t word(uint64_t state, uint64_t index, uint32_t pid = 0) {
    return (state << 62) | (uint64_t(pid & 0x3fffffffu) << 32) | uint32_t(index);
}
constexpr uint64_t state_of(uint64_t w) { return w >> 62; }
constexpr uint32_t pid_of(uint64_t w) { return uint32_t(w >> 32) & 0x3fffffffu; }
// the word's element index against i, modulo 2^32 (negative: an older lap)
constexpr int32_t lap_diff(uint64_t w, uint64_t i) { return int32_t(uint32_t(w) - uint32_t(i)); }
} // namespace

size_t Fifo::segment_size(uint32_t num_elems, uint32_t elem_size) noexcept {
    return align_up(sizeof(FifoHeader), 64) + size_t(num_elems) * elem_size;
}

void Fifo::format(void *base, uint32_t num_elems, uint32_t elem_size,
                  int32_t owner_pid, uint64_t seg_id, uint64_t start_time) noexcept {
    auto *h = new (base) FifoHeader{};
    h->num_elems = num_elems;
    h->elem_size = elem_size;
    h->owner_pid = owner_pid;
    h->seg_id = seg_id;
    h->owner_start_time = start_time;
    h->head.store(0, std::memory_order_relaxed);
    h->tail.store(0, std::memory_order_relaxed);
    h->signal.store(0, std::memory_order_relaxed);
    auto *elems = static_cast<uint8_t *>(base) + align_up(sizeof(FifoHeader), 64);
    for (uint32_t i = 0; i < num_elems; ++i) {
        auto *e = new (elems + size_t(i) * elem_size) ElemHeader{};
        e->seq.store(word(kFree, i), std::memory_order_relaxed);
    }
    h->version = kShmVersion;
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kShmMagic;
}

const char *Fifo::validate(const void *base, size_t mapped_size, uint64_t expected_seg_id,
                           FifoShape *shape) noexcept {
    if (mapped_size < sizeof(FifoHeader)) return "segment smaller than its header";
    auto *h = static_cast<const FifoHeader *>(base);
    if (load_once(h->magic) != kShmMagic) return "bad magic";
    if (load_once(h->version) != kShmVersion) return "unsupported segment version";
    if (load_once(h->seg_id) != expected_seg_id) return "segment id mismatch (stale address?)";
    const FifoShape s{load_once(h->num_elems), load_once(h->elem_size)};
    if (!is_pow2(s.num_elems)) return "element count not a power of two";
    if (s.elem_size < sizeof(ElemHeader) + 8 || s.elem_size % 16 != 0 ||
        s.elem_size > (64u << 20)) {
        return "bad element size";
    }
    if (segment_size(s.num_elems, s.elem_size) > mapped_size) {
        return "segment truncated";
    }
    if (shape != nullptr) *shape = s;
    return nullptr;
}

Fifo::Fifo(void *base, const FifoShape &shape) noexcept {
    hdr_ = static_cast<FifoHeader *>(base);
    elems_ = static_cast<uint8_t *>(base) + align_up(sizeof(FifoHeader), 64);
    num_elems_ = shape.num_elems;
    elem_size_ = shape.elem_size;
    mask_ = num_elems_ - 1;
    read_idx_ = hdr_->tail.load(std::memory_order_acquire);
}

Fifo::Fifo(void *base, size_t mapped_size) noexcept
    : Fifo(base, FifoShape{static_cast<FifoHeader *>(base)->num_elems,
                           static_cast<FifoHeader *>(base)->elem_size}) {
    (void)mapped_size;
}

bool Fifo::has_space() const noexcept {
    const uint64_t h = hdr_->head.load(std::memory_order_relaxed);
    // slot h still holds an element of an older lap: full
    return lap_diff(elem(h)->seq.load(std::memory_order_acquire), h) >= 0;
}

void *Fifo::claimed(ElemHeader *e, uint64_t h, uint64_t *index) noexcept {
    // head moves on past the slot just claimed (unless a helper did)
    uint64_t expect = h;
    hdr_->head.compare_exchange_strong(expect, h + 1, std::memory_order_release,
                                       std::memory_order_relaxed);
    *index = h;
    return reinterpret_cast<uint8_t *>(e) + sizeof(ElemHeader);
}

void *Fifo::reserve(uint64_t *index) noexcept {
    const uint32_t me = uint32_t(self_pid());
    uint64_t h = hdr_->head.load(std::memory_order_relaxed);
    {
        // the common case: the head's slot is free for it
        ElemHeader *e = elem(h);
        uint64_t w = word(kFree, h);
        if (__builtin_expect(e->seq.compare_exchange_strong(w, word(kClaimed, h, me),
                                                            std::memory_order_acq_rel,
                                                            std::memory_order_relaxed),
                             1)) {
            return claimed(e, h, index);
        }
    }
    return reserve_slow(h, me, index);
}

void *Fifo::reserve_slow(uint64_t h, uint32_t me, uint64_t *index) noexcept {
    // bounded: shared words written by a hostile or broken producer end in
    // "full", never in an endless loop
    for (uint32_t step = 0; step < 2 * num_elems_ + 16; ++step) {
        ElemHeader *e = elem(h);
        uint64_t w = e->seq.load(std::memory_order_acquire);
        const int32_t d = lap_diff(w, h);
        if (d == 0 && state_of(w) == kFree) {
            if (e->seq.compare_exchange_strong(w, word(kClaimed, h, me), std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
                return claimed(e, h, index);
            }
            continue; // another producer claimed it: seen again, then helped past
        }
        if (d < 0 && state_of(w) == kFree) {
            // the slot still waits for an older element, which nobody
            // claimed: head ran ahead of every claim, which only a write by
            // another hand makes; it goes back to the consumer's position
            // (the slots from there are claimed again or helped past)
            uint64_t expect = h;
            // the slot's element: h less the lap distance (modulo 2^32, unsigned)
            const uint64_t awaited = h - uint64_t(uint32_t(uint32_t(h) - uint32_t(w)));
            uint64_t back = hdr_->tail.load(std::memory_order_acquire);
            if (back > awaited || awaited - back > num_elems_) back = awaited;
            if (hdr_->head.compare_exchange_strong(expect, back, std::memory_order_relaxed,
                                                   std::memory_order_relaxed)) {
                h = back;
            } else {
                h = expect;
            }
            continue;
        }
        if (d < 0) {
            // an element of an older lap not consumed yet: full, unless head moved
            const uint64_t now = hdr_->head.load(std::memory_order_relaxed);
            if (now == h) return nullptr;
            h = now;
            continue;
        }
        // slot h is taken (claimed or committed) or already released for a
        // later lap: head lags behind; help it on
        uint64_t expect = h;
        if (hdr_->head.compare_exchange_strong(expect, h + 1, std::memory_order_relaxed,
                                               std::memory_order_relaxed)) {
            ++h;
        } else {
            h = expect;
        }
    }
    return nullptr;
}

void Fifo::commit(uint64_t index, uint8_t am_id, uint32_t length) noexcept {
    ElemHeader *e = elem(index);
    e->length = length;
    e->am_id = am_id;
    e->flags = 0;
    e->seq.store(word(kCommitted, index), std::memory_order_release);
}

bool Fifo::reclaim(ElemHeader *e, uint64_t w) noexcept {
    if (lap_diff(w, read_idx_) != 0) return false;
    // claimed, not committed: in flight, or its producer died in between
    if (++stuck_polls_ % kClaimPollsBeforeCheck != 0) return false;
    const pid_t pid = pid_t(pid_of(w));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) return false;
    e->length = 0;
    e->am_id = kAmIdDiscard;
    e->flags = 0;
    if (!e->seq.compare_exchange_strong(w, word(kCommitted, read_idx_), std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
        return false;
    }
    ++reclaimed_;
    return true;
}

bool Fifo::peek(Message *msg) noexcept {
    ElemHeader *e = elem(read_idx_);
    const uint64_t w = e->seq.load(std::memory_order_acquire);
    // the common cases first: the next element committed, or nothing sent
    if (__builtin_expect(w != word(kCommitted, read_idx_), 0)) {
        if (state_of(w) != kClaimed || !reclaim(e, w)) return false;
    }
    stuck_polls_ = 0;
    msg->am_id = load_once(e->am_id);
    // a corrupt length must never make the consumer read past the element:
    // one load, checked and used (a producer may still be writing it)
    const uint32_t length = load_once(e->length);
    msg->corrupt = length > max_payload();
    msg->length = msg->corrupt ? 0 : length;
    msg->data = reinterpret_cast<uint8_t *>(e) + sizeof(ElemHeader);
    return true;
}

void Fifo::release() noexcept {
    elem(read_idx_)->seq.store(word(kFree, read_idx_ + num_elems_), std::memory_order_release);
    ++read_idx_;
    hdr_->tail.store(read_idx_, std::memory_order_release);
}

} // namespace gdrpipe::wire
