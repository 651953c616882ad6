// Epoch-based reclamation (see epoch.hpp): slot registry and retire list.
#include "epoch.hpp"

#include <limits>
#include <mutex>
#include <new>
#include <vector>

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gdrpipe::cache::detail::epoch {

constinit std::atomic<std::uint64_t> g_epoch{1};
constinit thread_local Slot *t_slot = nullptr;
constinit std::atomic<bool> g_light_readers{false};

namespace {

// Registry of every slot ever created; slots are reused, never freed.
constinit std::atomic<Slot *> g_slots{nullptr};
constinit std::atomic<std::uint32_t> g_next_id{0};

struct Retired {
    std::uint64_t epoch;
    void *p;
    void (*del)(void *);
};
struct Garbage {
    std::mutex mu;
    std::vector<Retired> items;
    std::size_t next_collect = kReclaimBatch; // collect when items reach this
};
// Never destroyed: retire() may run during static destruction (a RegionRef
// held by a static, a cache destroyed at exit).
Garbage &garbage() {
    static Garbage *g = new Garbage;
    return *g;
}

constinit thread_local bool t_exiting = false;
// Gives the slot back when the thread exits.
struct SlotOwner {
    bool armed = false;
    ~SlotOwner() {
        if (t_slot != nullptr) {
            t_slot->active.store(0, std::memory_order_relaxed);
            t_slot->owned.store(false, std::memory_order_release);
            t_slot = nullptr;
        }
        t_exiting = true;
    }
};
thread_local SlotOwner t_owner;

int sys_membarrier(int cmd) { return static_cast<int>(::syscall(__NR_membarrier, cmd, 0, 0)); }

// fork(): the child has only the forking thread. Slots of the other threads
// would keep their announcements (blocking reclamation for good) and the
// retire list's lock could be held by a thread that no longer exists.
void before_fork() { garbage().mu.lock(); }
void after_fork_parent() { garbage().mu.unlock(); }
void after_fork_child() {
    for (Slot *s = g_slots.load(std::memory_order_relaxed); s != nullptr; s = s->next) {
        if (s != t_slot) {
            s->active.store(0, std::memory_order_relaxed);
            s->owned.store(false, std::memory_order_relaxed);
        }
    }
    garbage().mu.unlock();
}

// membarrier registration belongs to the address space: a forked child
// registers again (once) when its first expedited call is refused.
bool expedited_barrier() noexcept {
    if (sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
        return true;
    }
    return sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
           sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0;
}

// Decides the reader mode once (thread-safe static init). Called before any
// slot is handed out and before any scan, so both sides agree on the mode.
bool light_readers() noexcept {
    static const bool light = [] {
        const int cmds = sys_membarrier(MEMBARRIER_CMD_QUERY);
        const bool ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
                        sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
        g_light_readers.store(ok, std::memory_order_relaxed);
        (void)garbage();
        ::pthread_atfork(before_fork, after_fork_parent, after_fork_child);
        return ok;
    }();
    return light;
}

// Smallest epoch announced by a thread inside a read section (max if none).
std::uint64_t min_active() noexcept {
    std::uint64_t m = std::numeric_limits<std::uint64_t>::max();
    for (Slot *s = g_slots.load(std::memory_order_acquire); s != nullptr; s = s->next) {
        const std::uint64_t a = s->active.load(std::memory_order_seq_cst);
        if (a != 0 && a < m) {
            m = a;
        }
    }
    return m;
}

} // namespace

Slot *acquire_slot() noexcept {
    if (t_exiting) {
        return nullptr;
    }
    light_readers();
    Slot *s = nullptr;
    for (Slot *c = g_slots.load(std::memory_order_acquire); c != nullptr; c = c->next) {
        bool expected = false;
        if (!c->owned.load(std::memory_order_relaxed) &&
            c->owned.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
            s = c;
            break;
        }
    }
    if (s == nullptr) {
        s = new (std::nothrow) Slot;
        if (s == nullptr) {
            return nullptr;
        }
        s->owned.store(true, std::memory_order_relaxed);
        s->id = g_next_id.fetch_add(1, std::memory_order_relaxed);
        Slot *head = g_slots.load(std::memory_order_relaxed);
        do {
            s->next = head;
        } while (!g_slots.compare_exchange_weak(head, s, std::memory_order_release,
                                                std::memory_order_relaxed));
    }
    t_slot = s;
    t_owner.armed = true; // registers the thread-exit destructor
    return s;
}

namespace {
// Moves what no running section can reach from g.items to `out`. g.mu held.
void collect(Garbage &g, std::vector<Retired> &out) noexcept {
    // Every reader that announced before this point is visible to the scan
    // below; every reader that announces after it sees the unpublishes that
    // preceded the retirements.
    // (Without membarrier, readers announce with seq_cst stores, and the
    // seq_cst epoch increment and slot loads order against them.)
    if (light_readers() && !expedited_barrier()) {
        return; // cannot order the readers: free nothing this time
    }
    const std::uint64_t m = min_active();
    std::size_t keep = 0;
    for (Retired &r : g.items) {
        if (r.epoch < m) {
            try {
                out.push_back(r);
                continue;
            } catch (...) {
            }
        }
        g.items[keep++] = r;
    }
    g.items.resize(keep);
    g.next_collect = keep + kReclaimBatch;
}
} // namespace

void retire(void *p, void (*del)(void *)) noexcept {
    Garbage &g = garbage();
    std::vector<Retired> to_free;
    {
        std::lock_guard<std::mutex> lk(g.mu);
        // A reader that announces an epoch > e entered after this point and
        // can no longer reach p (it was unpublished before retire()).
        const std::uint64_t e = g_epoch.fetch_add(1, std::memory_order_seq_cst);
        try {
            g.items.push_back(Retired{e, p, del});
        } catch (...) {
            return; // cannot defer: leak p rather than free it under a reader
        }
        if (g.items.size() >= g.next_collect) {
            collect(g, to_free);
        }
    }
    for (const Retired &r : to_free) {
        r.del(r.p);
    }
}

void reclaim() noexcept {
    Garbage &g = garbage();
    std::vector<Retired> to_free;
    {
        std::lock_guard<std::mutex> lk(g.mu);
        g_epoch.fetch_add(1, std::memory_order_seq_cst);
        collect(g, to_free);
    }
    for (const Retired &r : to_free) {
        r.del(r.p);
    }
}

std::size_t pending() noexcept {
    Garbage &g = garbage();
    std::lock_guard<std::mutex> lk(g.mu);
    return g.items.size();
}

} // namespace gdrpipe::cache::detail::epoch
