// Epoch-based reclamation for the region cache's lock-free hit path.
//
// Readers (get() hits, contains()) enter a short read section, read the
// published index snapshot and the Region objects it points to, and leave.
// Writers never free a snapshot or a Region object directly: they hand it to
// retire(), which frees it once every thread that was inside a read section
// when it was retired has left that section. One process-wide domain serves
// every RegionCache; each thread owns one Slot (its announcement line, never
// written by another thread) for its lifetime. See docs/region-cache.md.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gdrpipe::cache::detail::epoch {

struct alignas(64) Slot {
    // 0: not in a read section; else the global epoch seen at entry
    std::atomic<std::uint64_t> active{0};
    std::atomic<bool> owned{false};
    std::uint32_t id = 0; // dense, stable: indexes per-thread counter shards
    Slot *next = nullptr; // registry (slots are reused, never freed)
};

// The global epoch: advanced by every retire(), read at every section entry.
extern constinit std::atomic<std::uint64_t> g_epoch;
// this thread's slot once acquired (trivial TLS: no init wrapper on access)
extern constinit thread_local Slot *t_slot;

// This thread's slot; nullptr while the thread is exiting (callers then take
// the locked path).
Slot *acquire_slot() noexcept;
inline Slot *this_thread_slot() noexcept {
    Slot *s = t_slot;
    return s != nullptr ? s : acquire_slot();
}
inline constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};

// true: readers announce with a plain store and a compiler barrier, and the
// reclaimer makes every running thread execute a full barrier with
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) before it scans the slots
// (liburcu's "memb" flavour). false (no membarrier: old kernel, seccomp,
// valgrind): readers announce with a seq_cst store (a locked instruction).
// Set once, before the first slot is handed out; never changes.
extern constinit std::atomic<bool> g_light_readers;

// RAII read section. Not reentrant: a nested guard is empty (!guard).
class ReadGuard {
  public:
    ReadGuard() noexcept : slot_(this_thread_slot()) {
        if (slot_ == nullptr || slot_->active.load(std::memory_order_relaxed) != 0) {
            slot_ = nullptr;
            return;
        }
        // acquire: an announced epoch > e means the retire of e, and the
        // unpublish before it, happened before this section
        const std::uint64_t e = g_epoch.load(std::memory_order_acquire);
        if (g_light_readers.load(std::memory_order_relaxed)) {
            slot_->active.store(e, std::memory_order_relaxed);
            std::atomic_signal_fence(std::memory_order_seq_cst);
        } else {
            slot_->active.store(e, std::memory_order_seq_cst);
        }
    }
    ~ReadGuard() {
        if (slot_ != nullptr) {
            slot_->active.store(0, std::memory_order_release);
        }
    }
    ReadGuard(const ReadGuard &) = delete;
    ReadGuard &operator=(const ReadGuard &) = delete;
    explicit operator bool() const noexcept { return slot_ != nullptr; }
    std::uint32_t slot_id() const noexcept { return slot_ != nullptr ? slot_->id : kNoSlot; }

  private:
    Slot *slot_;
};

// Frees `p` with `del(p)` once no read section that began before this call
// is still running. Reclamation runs in batches (every kReclaimBatch
// retirements: one membarrier and one slot scan per batch), so up to that
// many objects wait longer. Must not be called inside a read section.
// Thread-safe; deleters run without any lock held.
inline constexpr std::size_t kReclaimBatch = 32;
void retire(void *p, void (*del)(void *)) noexcept;

// Objects retired and not freed yet (tests).
std::size_t pending() noexcept;
// Reclaims now whatever no running section can reach (tests, diagnostics).
void reclaim() noexcept;

} // namespace gdrpipe::cache::detail::epoch
