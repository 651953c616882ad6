// CUDA driver allocation/free interception; see cuda_hooks.hpp for semantics.
//
// This file: the table of live allocations, the dispatch of events to the
// listeners, and install()/uninstall() (patching the entry points). The hooks
// themselves are in cuda_hook_templates.hpp, the table of hooked entry points
// (groups and slots: cuda_hook_table.hpp) in cuda_hook_table.cc. The
// installation report's text is in hook_report.cc, the scan for allocations
// made before install() in preexisting_scan.cc.
//
// Static-initialization safety: install() may run from a constructor before
// main, and hooks may run after static destructors (cudart frees at exit). So
// g_orig is constinit, and all other state lives in a heap object created on
// first use and never destroyed.
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include "gdrpipe/hooks/patcher.hpp"
#include "gdrpipe/log.hpp"
#include "cuda_hook_table.hpp"
#include "cuda_hook_templates.hpp"
#include "hook_internal.hpp"

#include <atomic>
#include <cuda.h>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <pthread.h>
#include <unordered_map>

namespace gdrpipe::hooks {

constinit std::atomic<void *> detail::g_orig[detail::kGroups][detail::kSlots]{};
constinit thread_local int detail::t_depth = 0;

using namespace detail;

namespace {

constexpr int kMaxListeners = 16;

constinit std::atomic<bool> g_active{false};

struct Block {
    size_t length;
    MemKind kind;
    int device;
    uintptr_t owner; // pool (0: the device's current pool) or VMM allocation handle
};

struct PatchedEntry {
    std::string name;
    int group;
    int slot;
    Patch patch;
};

struct State {
    std::mutex install_mu;
    bool installed = false;
    Report report;
    std::vector<PatchedEntry> entries;
    std::unordered_map<void *, void *> trampoline_of; // entry -> trampoline
    int used_slots[kGroups] = {};

    // driver functions used by the hooks (never hooked themselves)
    std::atomic<void *> get_range{nullptr};   // cuMemGetAddressRange_v2
    std::atomic<void *> ptr_attr{nullptr};    // cuPointerGetAttribute
    std::atomic<void *> ctx_device{nullptr};  // cuCtxGetDevice
    std::atomic<void *> alloc_props{nullptr}; // cuMemGetAllocationPropertiesFromHandle

    std::mutex table_mu;
    std::map<uintptr_t, Block> live;
    std::map<uintptr_t, Block> pool_freed;

    pthread_rwlock_t listeners_lock = PTHREAD_RWLOCK_INITIALIZER;
    std::mutex listeners_write_mu;
    struct Slot {
        std::atomic<Listener> fn{nullptr};
        std::atomic<void *> arg{nullptr};
    } listeners[kMaxListeners];
    std::atomic<int> nlisteners{0};
    std::atomic<uint64_t> suppressed{0};
};

State &state()
{
    static State *s = new State(); // never destroyed: hooks may run during exit
    return *s;
}

bool have_listeners(State &s) noexcept
{
    return s.nlisteners.load(std::memory_order_acquire) > 0;
}

void dispatch(State &s, const Event &e) noexcept
{
    if (!have_listeners(s)) {
        return;
    }
    if (t_depth > 1) { // caused by a listener (or by the driver calling itself)
        s.suppressed.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    pthread_rwlock_rdlock(&s.listeners_lock);
    for (auto &l : s.listeners) {
        Listener fn = l.fn.load(std::memory_order_acquire);
        if (fn != nullptr) {
            try {
                fn(e, l.arg.load(std::memory_order_relaxed));
            } catch (...) {
                GP_ERROR("hooks: a listener threw an exception (ignored)");
            }
        }
    }
    pthread_rwlock_unlock(&s.listeners_lock);
}

size_t query_length(State &s, uintptr_t addr) noexcept
{
    auto f = reinterpret_cast<CUresult (*)(CUdeviceptr *, size_t *, CUdeviceptr)>(
        s.get_range.load(std::memory_order_relaxed));
    CUdeviceptr base = 0;
    size_t size = 0;
    if (f != nullptr && f(&base, &size, static_cast<CUdeviceptr>(addr)) == CUDA_SUCCESS &&
        base <= addr && addr < base + size) {
        return static_cast<size_t>(base + size - addr);
    }
    return 0;
}

} // namespace

// ---- what the hooks call (cuda_hook_templates.hpp) --------------------------

int detail::current_device() noexcept
{
    State &s = state();
    auto f = reinterpret_cast<CUresult (*)(CUdevice *)>(s.ctx_device.load(std::memory_order_relaxed));
    CUdevice d = -1;
    if (f != nullptr && f(&d) == CUDA_SUCCESS) {
        return static_cast<int>(d);
    }
    return -1;
}

void detail::after_alloc(uintptr_t addr, size_t len, MemKind kind, int device, uintptr_t owner,
                         const char *src) noexcept
{
    if (addr == 0) {
        return;
    }
    State &s = state();
    try {
        std::lock_guard<std::mutex> g(s.table_mu);
        if (kind == MemKind::pool && !s.pool_freed.empty()) {
            // a freed block whose memory is handed out again is no longer "freed"
            auto it = s.pool_freed.lower_bound(addr);
            if (it != s.pool_freed.begin()) {
                auto p = std::prev(it);
                if (p->first + p->second.length > addr) {
                    it = p;
                }
            }
            while (it != s.pool_freed.end() && it->first < addr + len) {
                it = s.pool_freed.erase(it);
            }
        }
        s.live[addr] = Block{len, kind, device, owner};
    } catch (...) {
        GP_WARN("hooks: out of memory recording an allocation");
    }
    dispatch(s, Event{EventType::alloc, addr, len, kind, device, src});
}

void detail::before_free(uintptr_t addr, MemKind hint, const char *src, bool to_pool_freed) noexcept
{
    if (addr == 0) {
        return;
    }
    State &s = state();
    Event e{EventType::free, addr, 0, hint, -1, src};
    bool found = false;
    {
        std::lock_guard<std::mutex> g(s.table_mu);
        auto it = s.live.find(addr);
        if (it != s.live.end()) {
            found = true;
            e.length = it->second.length;
            e.kind = it->second.kind;
            e.device = it->second.device;
            if (to_pool_freed && it->second.kind == MemKind::pool) {
                try {
                    s.pool_freed[addr] = it->second;
                } catch (...) {
                }
            }
            s.live.erase(it);
        }
    }
    if (!have_listeners(s)) {
        return;
    }
    if (!found) {
        e.length = query_length(s, addr);
    }
    dispatch(s, e);
}

void detail::before_free_range(uintptr_t addr, size_t len, MemKind kind, const char *src) noexcept
{
    State &s = state();
    Event e{EventType::free, addr, len, kind, -1, src};
    {
        std::lock_guard<std::mutex> g(s.table_mu);
        auto it = s.live.lower_bound(addr);
        while (it != s.live.end() && it->first < addr + len) {
            if (e.device < 0) {
                e.device = it->second.device;
            }
            it = s.live.erase(it);
        }
    }
    dispatch(s, e);
}

void detail::before_free_owned(bool pool, uintptr_t owner, const char *src) noexcept
{
    State &s = state();
    std::vector<std::pair<uintptr_t, Block>> gone;
    {
        std::lock_guard<std::mutex> g(s.table_mu);
        auto &m = pool ? s.pool_freed : s.live;
        for (auto it = m.begin(); it != m.end();) {
            const bool match = pool ? (it->second.owner == owner || it->second.owner == 0)
                                    : (it->second.kind == MemKind::vmm && it->second.owner == owner);
            if (match) {
                try {
                    gone.emplace_back(*it);
                } catch (...) {
                }
                it = m.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (const auto &[a, b] : gone) {
        dispatch(s, Event{EventType::free, a, b.length, b.kind, b.device, src});
    }
}

int detail::vmm_device(CUmemGenericAllocationHandle h, CUdeviceptr mapped) noexcept
{
    State &s = state();
    auto f = reinterpret_cast<CUresult (*)(CUmemAllocationProp *, CUmemGenericAllocationHandle)>(
        s.alloc_props.load(std::memory_order_relaxed));
    CUmemAllocationProp prop{};
    if (f != nullptr && f(&prop, h) == CUDA_SUCCESS && prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
        return prop.location.id;
    }
    // no cuMemGetAllocationPropertiesFromHandle: ask about the mapped address
    auto attr = reinterpret_cast<CUresult (*)(void *, CUpointer_attribute, CUdeviceptr)>(
        s.ptr_attr.load(std::memory_order_relaxed));
    int dev = -1;
    if (f == nullptr && attr != nullptr &&
        attr(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mapped) == CUDA_SUCCESS) {
        return dev;
    }
    return -1;
}

// ---- install ---------------------------------------------------------------

namespace {

void add_symbol(Report &r, std::string name, SymbolStatus st, void *addr, std::string reason)
{
    switch (st) {
    case SymbolStatus::patched: ++r.patched; break;
    case SymbolStatus::not_found: ++r.not_found; break;
    case SymbolStatus::failed: ++r.failed; break;
    case SymbolStatus::alias: break;
    }
    r.symbols.push_back(SymbolReport{std::move(name), st, addr, std::move(reason)});
}

void patch_entry(State &s, Report &rep, int g, const std::string &name, void *addr)
{
    if (auto it = s.trampoline_of.find(addr); it != s.trampoline_of.end()) {
        for (const auto &e : s.entries) {
            if (e.patch.target == addr) {
                add_symbol(rep, name, SymbolStatus::alias, addr, "same entry as " + e.name);
                return;
            }
        }
    }
    if (s.used_slots[g] >= kSlots) {
        add_symbol(rep, name, SymbolStatus::failed, addr, "no hook slot left for this prototype");
        return;
    }
    const int slot = s.used_slots[g];
    Patch p;
    std::string err;
    if (!prepare_patch(addr, groups()[g].hooks[slot], p, err)) {
        add_symbol(rep, name, SymbolStatus::failed, addr, err);
        return;
    }
    g_orig[g][slot].store(p.trampoline, std::memory_order_release);
    if (!apply_patch(p, err)) {
        add_symbol(rep, name, SymbolStatus::failed, addr, err);
        return;
    }
    ++s.used_slots[g];
    s.trampoline_of[addr] = p.trampoline;
    s.entries.push_back(PatchedEntry{name, g, slot, p});
    add_symbol(rep, name, SymbolStatus::patched, addr, {});
}

using GetProcAddressV2 = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);
using GetProcAddressV1 = CUresult (*)(const char *, void **, int, cuuint64_t);

} // namespace

// ---- public API -----------------------------------------------------------------

Report install(void *h, const Options &opts)
{
    State &s = state();
    std::lock_guard<std::mutex> g(s.install_mu);
    if (s.installed) {
        Report r = s.report;
        r.already_installed = true;
        return r;
    }
    if (!s.entries.empty()) { // after uninstall(): re-apply the same patches
        for (auto &e : s.entries) {
            std::string err;
            if (!apply_patch(e.patch, err)) {
                GP_ERROR("hooks: re-applying %s failed: %s", e.name.c_str(), err.c_str());
                s.report.error = "re-applying " + e.name + " failed: " + err;
            }
        }
        s.installed = true;
        g_active.store(s.report.complete(), std::memory_order_release);
        return s.report;
    }
    Report rep;
    if (h == nullptr) {
        rep.error = "null libcuda handle";
        return rep;
    }
    s.get_range.store(dlsym(h, "cuMemGetAddressRange_v2"));
    s.ptr_attr.store(dlsym(h, "cuPointerGetAttribute"));
    s.ctx_device.store(dlsym(h, "cuCtxGetDevice"));
    s.alloc_props.store(dlsym(h, "cuMemGetAllocationPropertiesFromHandle"));

    const GroupDesc *gd = groups();
    for (int gi = 0; gi < kGroups; ++gi) {
        if (!wanted(gd[gi].opt, opts)) {
            continue;
        }
        for (const char *name : gd[gi].names) {
            if (name == nullptr) {
                continue;
            }
            void *a = dlsym(h, name);
            if (a == nullptr) {
                add_symbol(rep, name, SymbolStatus::not_found, nullptr, {});
                continue;
            }
            patch_entry(s, rep, gi, name, a);
        }
    }
    if (opts.use_get_proc_address) {
        auto gpa2 = reinterpret_cast<GetProcAddressV2>(dlsym(h, "cuGetProcAddress_v2"));
        auto gpa1 = reinterpret_cast<GetProcAddressV1>(dlsym(h, "cuGetProcAddress"));
        if (gpa2 == nullptr && gpa1 == nullptr) {
            add_symbol(rep, "cuGetProcAddress", SymbolStatus::not_found, nullptr,
                       "entry points handed out by cuGetProcAddress cannot be cross-checked");
        }
        const cuuint64_t flag_set[] = {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};
        for (int gi = 0; gi < kGroups && (gpa2 || gpa1); ++gi) {
            if (gd[gi].gpa_name == nullptr || !wanted(gd[gi].opt, opts)) {
                continue;
            }
            for (cuuint64_t fl : flag_set) {
                void *a = nullptr;
                CUresult r;
                if (gpa2 != nullptr) {
                    CUdriverProcAddressQueryResult st{};
                    r = gpa2(gd[gi].gpa_name, &a, 12000, fl, &st);
                } else {
                    r = gpa1(gd[gi].gpa_name, &a, 12000, fl);
                }
                if (r != CUDA_SUCCESS || a == nullptr || s.trampoline_of.count(a) != 0) {
                    continue; // not provided, or an entry already patched
                }
                char name[96];
                std::snprintf(name, sizeof(name), "cuGetProcAddress(%s,flags=%llu)", gd[gi].gpa_name,
                              static_cast<unsigned long long>(fl));
                patch_entry(s, rep, gi, name, a);
            }
        }
    }
    s.report = rep;
    s.installed = true;
    g_active.store(rep.complete(), std::memory_order_release);
    if (rep.complete()) {
        GP_INFO("hooks: CUDA allocation hooks installed: %d entry points patched", rep.patched);
    } else {
        GP_WARN("hooks: CUDA allocation hooks incomplete: %s", rep.summary().c_str());
    }
    return rep;
}

void uninstall()
{
    State &s = state();
    std::lock_guard<std::mutex> g(s.install_mu);
    g_active.store(false, std::memory_order_release);
    for (auto &e : s.entries) {
        std::string err;
        if (!unpatch_function(e.patch, err)) {
            GP_ERROR("hooks: cannot unpatch %s: %s", e.name.c_str(), err.c_str());
        }
    }
    s.installed = false;
}

bool active() noexcept
{
    return g_active.load(std::memory_order_acquire);
}

bool add_listener(Listener fn, void *arg)
{
    if (fn == nullptr) {
        return false;
    }
    State &s = state();
    std::lock_guard<std::mutex> g(s.listeners_write_mu);
    for (auto &l : s.listeners) {
        if (l.fn.load(std::memory_order_relaxed) == nullptr) {
            l.arg.store(arg, std::memory_order_relaxed);
            l.fn.store(fn, std::memory_order_release);
            s.nlisteners.fetch_add(1, std::memory_order_acq_rel);
            return true;
        }
    }
    return false;
}

bool remove_listener(Listener fn, void *arg)
{
    State &s = state();
    bool found = false;
    {
        // listeners_write_mu is never held while waiting for the rwlock, so
        // this is safe from inside a callback too
        std::lock_guard<std::mutex> g(s.listeners_write_mu);
        for (auto &l : s.listeners) {
            if (l.fn.load(std::memory_order_relaxed) == fn &&
                l.arg.load(std::memory_order_relaxed) == arg) {
                l.fn.store(nullptr, std::memory_order_release);
                s.nlisteners.fetch_sub(1, std::memory_order_acq_rel);
                found = true;
                break;
            }
        }
    }
    if (found && t_depth == 0) {
        // wait until every dispatch that may have seen the listener is over
        // (inside a callback this thread holds the read lock: skip)
        pthread_rwlock_wrlock(&s.listeners_lock);
        pthread_rwlock_unlock(&s.listeners_lock);
    }
    return found;
}

uint64_t suppressed_events() noexcept
{
    return state().suppressed.load(std::memory_order_relaxed);
}

void for_each_live_allocation(AllocationCallback cb, void *arg)
{
    State &s = state();
    std::vector<std::pair<uintptr_t, Block>> copy;
    {
        std::lock_guard<std::mutex> g(s.table_mu);
        copy.assign(s.live.begin(), s.live.end());
    }
    for (const auto &[a, b] : copy) {
        cb(a, b.length, b.kind, b.device, arg);
    }
}

// the driver's cuPointerGetAttribute, for the scan (preexisting_scan.cc)
void *detail::pointer_attribute_fn() noexcept
{
    return state().ptr_attr.load(std::memory_order_relaxed);
}

std::vector<Original> originals()
{
    State &s = state();
    std::lock_guard<std::mutex> g(s.install_mu);
    std::vector<Original> out;
    for (const auto &e : s.entries) {
        out.push_back(Original{e.name, e.patch.target, e.patch.trampoline});
    }
    return out;
}

void *original_of(void *entry) noexcept
{
    State &s = state();
    std::lock_guard<std::mutex> g(s.install_mu);
    auto it = s.trampoline_of.find(entry);
    return it == s.trampoline_of.end() ? entry : it->second;
}

} // namespace gdrpipe::hooks
