// Interception of CUDA driver allocations and frees.
//
// gdrpipe must learn when GPU memory is freed/unmapped (to drop pinned-region
// and memory-type cache entries while the memory still exists) and allocated.
// The CUDA runtime (static cudart, the default) resolves driver functions
// through cuGetProcAddress and calls them through pointers, never the PLT, so
// install() patches the *code* of the driver's entry points (patcher.hpp):
// every export named below found by dlsym, plus every distinct address that
// cuGetProcAddress returns for the base names (flags DEFAULT, LEGACY_STREAM,
// PER_THREAD_DEFAULT_STREAM, version 12000) -- the per-thread (_ptsz) variants
// are separate functions. Calls are then caught whether made through the PLT,
// dlsym'd pointers or cuGetProcAddress'd pointers.
//
// Events:
//  - free-type events are dispatched BEFORE the real function runs (the memory
//    still exists while listeners run); alloc events AFTER a successful alloc.
//  - the length of a freed block comes from the module's table of the live
//    allocations it has seen, else from cuMemGetAddressRange_v2 (asked before
//    the free); length 0 means "unknown extent starting at address".
//  - cuMemFreeAsync: dispatched at call time (the block must not be used by
//    caches from then on, even though the stream may still use it).
//  - cuMemPoolTrimTo / cuMemPoolDestroy: pool blocks already freed with
//    cuMemFreeAsync were reported at that time; the pool may still hold their
//    physical memory. Before the trim/destroy runs, a free is dispatched again
//    for every such freed-but-not-trimmed block of that pool (and of the
//    device's default pool, for blocks from cuMemAllocAsync whose pool is not
//    known), and they are forgotten. A block re-allocated in the meantime is
//    dropped from that list.
//  - VMM: cuMemMap -> alloc [ptr,size) (kind vmm); cuMemUnmap(ptr,size) and
//    cuMemAddressFree(ptr,size) -> free of that range; cuMemRelease(handle) ->
//    free of every known still-mapped range of that handle (conservative: the
//    driver keeps them until unmapped, and the unmap reports them again).
//  - cuMemHostRegister -> alloc host_pinned; cuMemHostUnregister and
//    cuMemFreeHost -> free host_pinned.
//  Free events may thus be duplicated and may name ranges a listener never saw:
//  listeners must treat them as "invalidate whatever overlaps".
//  - events caused by a listener's own CUDA calls (re-entrancy on the same
//    thread) are NOT dispatched (see suppressed_events()); the table is still
//    updated.
//
// Failure is never silent: Report says, per entry point, patched / not found /
// failed (with the reason), and complete() is false when any found entry could
// not be patched; callers must then fall back to per-request queries.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gdrpipe::hooks {

enum class EventType : uint8_t { alloc, free };
enum class MemKind : uint8_t { device, managed, host_pinned, vmm, pool };

const char *to_string(EventType t) noexcept;
const char *to_string(MemKind k) noexcept;

struct Event {
    EventType type;
    uintptr_t address;
    size_t length;      // 0: unknown
    MemKind kind;
    int device;         // CUDA device ordinal, -1 when not known / not a device
                        // (allocs: the current context's device; VMM: the
                        // handle's location)
    const char *source; // prototype that produced the event, e.g. "cuMemFreeAsync"
                        // (also for its _ptsz twin); static string
};

struct Options {
    bool hook_allocs = true;   // also dispatch alloc events (and keep the table)
    bool hook_host = true;     // cuMemAllocHost/HostAlloc/FreeHost/HostRegister/Unregister
    bool hook_async = true;    // stream-ordered allocator and pools
    bool hook_vmm = true;      // cuMemMap/Unmap/Release/AddressFree
    bool use_get_proc_address = true; // cross-check with cuGetProcAddress_v2
};

enum class SymbolStatus : uint8_t { patched, not_found, failed, alias };
const char *to_string(SymbolStatus s) noexcept;

struct SymbolReport {
    std::string name;      // export name, or "cuGetProcAddress(cuMemFree,flags=2)"
    SymbolStatus status;
    void *address;         // entry address (null when not found)
    std::string reason;    // why it failed / what it aliases
};

struct Report {
    std::vector<SymbolReport> symbols;
    int patched = 0;
    int not_found = 0;
    int failed = 0;
    bool already_installed = false; // install() was called before; this is the first report
    std::string error;              // fatal error (bad handle...), empty otherwise

    // true when every entry point that exists was patched and at least the
    // primary free (cuMemFree_v2) is covered
    bool complete() const noexcept;
    std::string summary() const; // one line per symbol
};

// Patches the driver loaded at `libcuda_handle` (a dlopen handle). Idempotent
// and thread-safe: later calls return the first call's report (with
// already_installed set). Callable before main (no static-order dependencies).
Report install(void *libcuda_handle, const Options &opts = {});
// Restores every patched entry point (tests, benchmarks). Trampolines and
// stub pages stay valid; a later install() re-applies the same patches (its
// handle and options are then ignored).
void uninstall();
// true between a successful (complete) install and uninstall
bool active() noexcept;

// Listeners: may be added/removed at any time from any thread. Once
// remove_listener returns, the callback is not running and will not be called
// again -- except when remove_listener is called from inside a callback, where
// only the calling thread is covered. Up to 16 listeners.
using Listener = void (*)(const Event &e, void *arg);
bool add_listener(Listener fn, void *arg);
bool remove_listener(Listener fn, void *arg);
uint64_t suppressed_events() noexcept;

// Allocations seen since install that are still live.
using AllocationCallback = void (*)(uintptr_t address, size_t length, MemKind kind, int device,
                                    void *arg);
void for_each_live_allocation(AllocationCallback cb, void *arg);

// Best effort: finds device allocations made before install. Scans
// /proc/self/maps for candidate regions (mappings of /dev/nvidia*, PROT_NONE
// reservations, and -- when include_anonymous -- anonymous rw mappings) and
// probes them with cuPointerGetAttribute(RANGE_START_ADDR/RANGE_SIZE) at
// `step` granularity; inside a 2 MiB chunk that holds an allocation it probes
// every 512 bytes (sub-allocations). /dev/nvidia* mappings are probed first,
// then regions by increasing size; regions larger than max_region_bytes (e.g.
// sanitizer shadow memory) are skipped. Stops after max_probes probes.
// An allocation that straddles two candidate regions may be reported twice.
// Returns the number of ranges reported, or -1 when install() has not run.
struct ScanOptions {
    bool include_anonymous = false;
    size_t step = size_t{2} << 20;
    size_t max_probes = size_t{1} << 20;
    size_t max_region_bytes = size_t{1} << 40;
};
int scan_preexisting(AllocationCallback cb, void *arg, const ScanOptions &opts = {});

// The trampolines: call these to reach the original driver functions without
// the hooks (gdrpipe's own allocations). original_of(entry) maps an entry
// address (from dlsym/cuGetProcAddress) to its trampoline, or returns `entry`
// unchanged when it is not patched.
struct Original {
    std::string name;
    void *entry;
    void *trampoline;
};
std::vector<Original> originals();
void *original_of(void *entry) noexcept;

} // namespace gdrpipe::hooks
