// Internal state of the CUDA-driver simulator (libcuda.so.1 for tests).
// Compiled with -D__CUDA_API_VERSION_INTERNAL so cuda.h declares every
// exported symbol under its real name (cuMemAlloc_v2, cuMemAlloc, *_ptsz).
#pragma once
#include <cuda.h>
#include "gdrpipe/cuda/copy_kernel_abi.h"
#include "gdrpipe/cuda/reduce_abi.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

// Every exported driver entry point: a distinct, patchable body.
#define SIM_API extern "C" __attribute__((visibility("default"), noinline, used))

namespace sim {

// ---------------------------------------------------------------- timing --
// *_PG: copies between a device and pageable (unregistered) host memory;
// unless the topology sets them they time as h2d / d2h.
enum Path { P_H2D, P_D2H, P_D2D, P_PEER, P_NOPEER, P_H2H, P_H2D_PG, P_D2H_PG, P_COUNT };
struct PathModel { double lat_s = 0; double bw_Bps = 0; bool set = false; };  // bw 0: unlimited
struct Topology {
  PathModel path[P_COUNT];
  // p2p groups: devices in one group can access each other
  bool p2p_all = true;
  std::vector<std::vector<int>> groups;
  bool can_peer(int a, int b) const;
};
// Parses a preset name and/or "key=value" items; returns false + message on error.
bool parse_topology(const std::string& spec, Topology& out, std::string& err);
double now_s();
void wait_until(double deadline_s);

// ------------------------------------------------------- VA range allocator --
class RangeAlloc {
 public:
  void init(uintptr_t base, size_t size);
  uintptr_t alloc(size_t size, size_t align);  // 0 on failure, first fit
  void free(uintptr_t addr, size_t size);
  bool contains(uintptr_t a) const { return a >= base_ && a < base_ + size_; }
 private:
  uintptr_t base_ = 0;
  size_t size_ = 0;
  std::map<uintptr_t, size_t> free_;  // start -> length, coalesced
};

// A RW alias of (part of) a memfd: what the simulated copy engine touches.
struct Backing {
  char* alias = nullptr;
  size_t len = 0;
  ~Backing();
};
std::shared_ptr<Backing> map_alias(int fd, size_t off, size_t len);

// ------------------------------------------------------------ allocations --
enum class Kind { Device, Managed, PinnedHost, Registered, Vmm, Pool, IpcImport, PoolImport };
struct Pool;
struct Phys;

struct Alloc {
  uintptr_t base = 0;
  size_t size = 0;        // requested size (what RANGE_SIZE reports)
  size_t span = 0;        // VA span taken from the reserved range (0 for host kinds)
  Kind kind = Kind::Device;
  int dev = 0;
  uint64_t id = 0;        // BUFFER_ID
  int fd = -1;            // owned memfd (Device, Managed, IpcImport)
  std::string memfd_tag;  // nonce part of the memfd name (IPC validation)
  uint64_t nonce = 0;
  std::shared_ptr<Backing> backing;  // null for host kinds
  bool sync_memops = false;
  bool accessible = true;  // VMM: after cuMemSetAccess
  Pool* pool = nullptr;    // Pool, PoolImport
  size_t pool_off = 0;
  bool pool_freed = false;  // freed to the pool cache, still mapped
  bool free_pending = false;
  Phys* phys = nullptr;  // Vmm
  int ipc_refs = 0;      // IpcImport
  std::pair<int, uint64_t> ipc_key{0, 0};
  bool is_device_memory() const {
    return kind != Kind::PinnedHost && kind != Kind::Registered;
  }
};

struct Phys {  // cuMemCreate handle
  int fd = -1;
  size_t size = 0;
  int dev = 0;
  int refs = 1;  // the handle itself + one per mapping
  bool exportable = false;
};

struct Pool {
  int dev = 0;
  int fd = -1;
  uint64_t nonce = 0;
  size_t cap = 0;
  bool is_default = false;
  bool imported = false;
  bool exportable = false;
  RangeAlloc offs;
  std::vector<Alloc*> cached;  // freed blocks, still mapped
};

// ------------------------------------------------------- streams / events --
struct Stream;
struct Op {
  std::function<void()> fn;                 // runs without the lock
  std::vector<std::function<bool()>> deps;  // evaluated under the lock
  // virtual clock (GDRPIPE_SIM_CLOCK=virtual): the op's place in modeled
  // time, fixed when it is enqueued (enqueue())
  double v_after = 0;  // starts no earlier (an event waited for)
  double v_busy = 0;   // occupies its link this long
  double v_lat = 0;    // then completes this much later
  uint64_t v_link = 0; // the link it occupies (0: none)
};
struct Stream {
  struct Ctx* ctx = nullptr;
  unsigned flags = 0;
  bool legacy = false;
  bool per_thread = false;
  std::deque<Op> q;
  uint64_t enq = 0, done = 0;
  double v_end = 0;  // virtual clock: when the last enqueued op completes
  bool stop = false;
  // the worker waits for work on its own condition (g->cv is for
  // completions: a copy finishing wakes its waiters, not every idle worker)
  std::condition_variable work;
  std::thread th;
};
struct EventState {
  uint64_t rec = 0, done = 0;
  double t = 0;
  double vt = 0;  // virtual clock: when the last record completes
  unsigned flags = 0;
};
struct Event {
  std::shared_ptr<EventState> st;
};

struct Ctx {
  int dev = 0;
  std::shared_ptr<Stream> legacy;
};

struct Device {
  Ctx ctx;
  int primary_refs = 0;
  size_t used = 0;
  std::vector<bool> peer_enabled;
  Pool* default_pool = nullptr;
};

struct State {
  int ndev = 0;
  std::vector<std::unique_ptr<Device>> devs;
  Topology topo;
  size_t dev_mem = 0;
  uintptr_t va_base = 0;
  size_t va_size = 0;
  RangeAlloc va;
  std::map<uintptr_t, std::unique_ptr<Alloc>> allocs;  // by base address
  std::map<uintptr_t, size_t> reservations;            // cuMemAddressReserve
  std::map<Stream*, std::shared_ptr<Stream>> streams;
  std::set<Event*> events;
  std::set<Phys*> phys;
  std::set<Pool*> pools;
  std::map<std::pair<int, uint64_t>, Alloc*> ipc_imports;  // (pid, buffer id)
  std::map<uint64_t, double> link_free;  // timing: when a link is idle again
  double memcpy_Bps = 4e9;               // measured host memcpy speed (EWMA)
  double time_scale = 1.0;               // GDRPIPE_SIM_TIME_SCALE: modeled times x this
  // GDRPIPE_SIM_CLOCK=virtual: copies complete at once and time is modeled
  // time only (docs/cudasim.md, "Virtual clock")
  bool virtual_clock = false;
  double host_vt = 0;                    // the process's virtual now
  std::map<uint64_t, double> link_vfree; // virtual clock: when a link is idle again
  std::condition_variable cv;            // any progress
};

extern std::mutex g_mu;
extern State* g;  // null until cuInit
using Lock = std::unique_lock<std::mutex>;

// helpers (all called with g_mu held unless noted)
CUresult init_state();
std::vector<Ctx*>& ctx_stack();  // this thread's context stack
CUresult check_init();
Ctx* current_ctx();
CUresult need_ctx(Ctx** out);
uint64_t next_buffer_id();
uint64_t random64();
Alloc* find_alloc(uintptr_t p);  // allocation containing p
Alloc* add_alloc(std::unique_ptr<Alloc> a);
// device memory: take a VA span, create a memfd, map it PROT_NONE at the user
// VA and a RW alias; `fd_out` left open for the caller to own.
CUresult map_device_range(size_t span, int fd, size_t fd_off, uintptr_t* va_out);
void release_va(uintptr_t base, size_t span);
CUresult new_memfd(size_t size, int dev, std::string* tag, uint64_t* nonce, int* fd_out);
int memfd_device(int fd);  // device encoded in a simulator memfd's name, or -1
size_t round_span(size_t size, size_t* align);
void destroy_alloc(Alloc* a);  // unmaps and erases from g->allocs
void pool_trim(Pool* p, size_t keep);
void trim_all_pools();

// the batched copy kernel's copies (sim_kernel.cc), in stream order
CUresult do_copy_batch(const gp_copy_desc_t* d, unsigned n, CUstream h, bool per_thread);
CUresult do_reduce(const gp_reduce_args_t& a, CUstream h, bool per_thread);

// streams
CUresult get_stream(CUstream h, bool per_thread, Stream** out);
void enqueue(Stream* s, Op op);
// Virtual clock: the host has seen work that completes at virtual time t
// (a synchronize or a successful query); the process's now moves there.
void vt_seen(double t);
void stream_wait_idle(Lock& lk, Stream* s);
void stop_stream(Lock& lk, const std::shared_ptr<Stream>& s);
Stream* new_stream(Ctx* ctx, unsigned flags, bool legacy, bool per_thread);

}  // namespace sim
