// Global state, the reserved device VA range and its first-fit allocator,
// memfd helpers, fork handling and teardown.
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cudasim.h"
#include "sim_internal.hpp"

namespace sim {

std::mutex g_mu;
State* g = nullptr;

namespace {
std::atomic<uint64_t> g_buffer_ids{0};
// states left behind in a forked child: still reachable, never torn down there
std::vector<State*>* g_orphans = nullptr;
uint64_t g_generation = 0;  // bumped on fork: invalidates thread-local ctx stacks

struct ThreadCtx {
  uint64_t gen = 0;
  std::vector<Ctx*> stack;
};
thread_local ThreadCtx t_ctx;
}  // namespace

std::vector<Ctx*>& ctx_stack() {
  if (t_ctx.gen != g_generation) {
    t_ctx.stack.clear();
    t_ctx.gen = g_generation;
  }
  return t_ctx.stack;
}

CUresult check_init() { return g ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

Ctx* current_ctx() {
  auto& st = ctx_stack();
  return st.empty() ? nullptr : st.back();
}

CUresult need_ctx(Ctx** out) {
  if (!g) return CUDA_ERROR_NOT_INITIALIZED;
  *out = current_ctx();
  return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

uint64_t next_buffer_id() { return ++g_buffer_ids; }

uint64_t random64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v) v = uint64_t(now_s() * 1e9) ^ uint64_t(getpid());
  return v;
}

// ------------------------------------------------------------ RangeAlloc --
void RangeAlloc::init(uintptr_t base, size_t size) {
  base_ = base;
  size_ = size;
  free_.clear();
  free_[base] = size;
}

uintptr_t RangeAlloc::alloc(size_t size, size_t align) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    uintptr_t beg = it->first, end = it->first + it->second;
    uintptr_t a = (beg + align - 1) & ~uintptr_t(align - 1);
    if (a + size > end || a < beg) continue;
    free_.erase(it);
    if (a > beg) free_[beg] = a - beg;
    if (a + size < end) free_[a + size] = end - (a + size);
    return a;
  }
  return 0;
}

void RangeAlloc::free(uintptr_t addr, size_t size) {
  auto it = free_.emplace(addr, size).first;
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) {
    it->second += next->second;
    free_.erase(next);
  }
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      free_.erase(it);
    }
  }
}

// -------------------------------------------------------- memfd / mapping --
Backing::~Backing() {
  if (alias) munmap(alias, len);
}

std::shared_ptr<Backing> map_alias(int fd, size_t off, size_t len) {
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(off));
  if (p == MAP_FAILED) return nullptr;
  auto b = std::make_shared<Backing>();
  b->alias = static_cast<char*>(p);
  b->len = len;
  return b;
}

size_t round_span(size_t size, size_t* align) {
  const size_t small = size_t(64) << 10, big = size_t(2) << 20;
  size_t a = size < big ? small : big;
  if (align) *align = a;
  if (size == 0) size = 1;
  return (size + a - 1) & ~(a - 1);
}

// The name carries the device and a nonce: "gpsim-d<dev>-<nonce>".
CUresult new_memfd(size_t size, int dev, std::string* tag, uint64_t* nonce, int* fd_out) {
  uint64_t n = random64();
  char name[64];
  snprintf(name, sizeof name, "gpsim-d%d-%016llx", dev, static_cast<unsigned long long>(n));
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, off_t(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (tag) *tag = name;
  if (nonce) *nonce = n;
  *fd_out = fd;
  return CUDA_SUCCESS;
}

int memfd_device(int fd) {
  char path[64], link[256];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return -1;
  link[n] = 0;
  const char* p = strstr(link, "gpsim-d");
  return p ? atoi(p + 7) : -1;
}

// Takes a VA span from the reserved range and maps `fd` there PROT_NONE: the
// device pointer is a real mapping that the CPU cannot touch.
CUresult map_device_range(size_t span, int fd, size_t fd_off, uintptr_t* va_out) {
  size_t align = span >= (size_t(2) << 20) ? size_t(2) << 20 : size_t(64) << 10;
  uintptr_t va = g->va.alloc(span, align);
  if (!va) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = mmap(reinterpret_cast<void*>(va), span, PROT_NONE, MAP_SHARED | MAP_FIXED, fd,
                 off_t(fd_off));
  if (p == MAP_FAILED) {
    g->va.free(va, span);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *va_out = va;
  return CUDA_SUCCESS;
}

// Returns a span to PROT_NONE anonymous memory and to the allocator.
void release_va(uintptr_t base, size_t span) {
  mmap(reinterpret_cast<void*>(base), span, PROT_NONE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  g->va.free(base, span);
}

Alloc* find_alloc(uintptr_t p) {
  if (!g) return nullptr;
  auto it = g->allocs.upper_bound(p);
  if (it == g->allocs.begin()) return nullptr;
  --it;
  Alloc* a = it->second.get();
  size_t len = a->size ? a->size : 1;
  return p < a->base + len ? a : nullptr;
}

Alloc* add_alloc(std::unique_ptr<Alloc> a) {
  a->id = next_buffer_id();
  Alloc* raw = a.get();
  g->allocs[raw->base] = std::move(a);
  return raw;
}

void destroy_alloc(Alloc* a) {
  switch (a->kind) {
    case Kind::PinnedHost:
      munmap(reinterpret_cast<void*>(a->base), a->span);
      break;
    case Kind::Registered:
      break;
    case Kind::Vmm:
      // cuMemUnmap restores the range; the reservation keeps the VA
      mmap(reinterpret_cast<void*>(a->base), a->size, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      break;
    case Kind::Pool:
    case Kind::PoolImport:
      release_va(a->base, a->span);
      if (a->kind == Kind::Pool) {
        fallocate(a->pool->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(a->pool_off),
                  off_t(a->span));
        a->pool->offs.free(a->pool_off, a->span);
        g->devs[size_t(a->dev)]->used -= a->span;
      }
      break;
    default:
      release_va(a->base, a->span);
      if (a->kind != Kind::IpcImport) g->devs[size_t(a->dev)]->used -= a->span;
      break;
  }
  if (a->fd >= 0) close(a->fd);
  g->allocs.erase(a->base);
}

// ------------------------------------------------------------ lifecycle --
namespace {

void teardown(State* s) {
  Lock lk(g_mu);
  std::vector<std::shared_ptr<Stream>> all;
  for (auto& kv : s->streams) all.push_back(kv.second);
  for (auto& st : all) stop_stream(lk, st);
  s->streams.clear();
  for (auto& d : s->devs) d->ctx.legacy.reset();
  while (!s->allocs.empty()) destroy_alloc(s->allocs.begin()->second.get());
  for (Pool* p : s->pools) {
    close(p->fd);
    delete p;
  }
  for (Phys* p : s->phys) {
    close(p->fd);
    delete p;
  }
  for (Event* e : s->events) delete e;
  munmap(reinterpret_cast<void*>(s->va_base), s->va_size);
  g = nullptr;
  lk.unlock();
  delete s;
}

void at_fork_prepare() { g_mu.lock(); }
void at_fork_parent() { g_mu.unlock(); }
// The child gets a fresh, uninitialized simulator (worker threads do not
// survive fork). The parent's state stays reachable but is never used.
void at_fork_child() {
  if (g) {
    if (!g_orphans) g_orphans = new std::vector<State*>;
    g_orphans->push_back(g);
    g = nullptr;
  }
  g_generation++;
  g_mu.unlock();
}

__attribute__((constructor)) void sim_ctor() {
  pthread_atfork(at_fork_prepare, at_fork_parent, at_fork_child);
}

__attribute__((destructor)) void sim_dtor() {
  if (g) teardown(g);
}

size_t env_size(const char* name, size_t def) {
  const char* v = getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  unsigned long long n = strtoull(v, &end, 10);
  return (*end || n == 0) ? def : size_t(n);
}

}  // namespace

CUresult init_state() {
  if (g) return CUDA_SUCCESS;
  auto s = std::make_unique<State>();
  s->ndev = int(env_size("GDRPIPE_SIM_DEVICES", 2));
  if (s->ndev > 64) s->ndev = 64;
  s->dev_mem = env_size("GDRPIPE_SIM_MEM_GIB", 16) << 30;
  s->va_size = env_size("GDRPIPE_SIM_VA_GIB", 32) << 30;
  // Multiplies every modeled latency and transfer time (divides bandwidths),
  // so that modeled times dominate scheduling noise on a small, loaded machine.
  if (const char* ts = getenv("GDRPIPE_SIM_TIME_SCALE")) {
    char* end = nullptr;
    double v = strtod(ts, &end);
    if (end == ts || *end != '\0' || !(v > 0) || v > 1e6) {
      fprintf(stderr, "cudasim: GDRPIPE_SIM_TIME_SCALE: '%s' is not a positive number\n", ts);
      return CUDA_ERROR_INVALID_VALUE;
    }
    s->time_scale = v;
  }
  // GDRPIPE_SIM_CLOCK=virtual: modeled time only, no waiting (timings read
  // gdrpipe_sim_virtual_clock and events; deterministic whatever the load)
  if (const char* ck = getenv("GDRPIPE_SIM_CLOCK"); ck && *ck) {
    if (strcmp(ck, "virtual") == 0) s->virtual_clock = true;
    else if (strcmp(ck, "real") != 0) {
      fprintf(stderr, "cudasim: GDRPIPE_SIM_CLOCK: '%s' is neither 'real' nor 'virtual'\n", ck);
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::string err;
  const char* topo = getenv("GDRPIPE_SIM_TOPO");
  if (!parse_topology("fast", s->topo, err) ||
      (topo && *topo && !parse_topology(topo, s->topo, err))) {
    fprintf(stderr, "cudasim: GDRPIPE_SIM_TOPO: %s\n", err.c_str());
    return CUDA_ERROR_INVALID_VALUE;
  }
  void* va = mmap(nullptr, s->va_size + (size_t(2) << 20), PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (va == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  // 2 MiB-align the usable part; keep the whole mapping for teardown
  s->va_base = (reinterpret_cast<uintptr_t>(va) + (size_t(2) << 20) - 1) & ~((size_t(2) << 20) - 1);
  munmap(va, s->va_base - reinterpret_cast<uintptr_t>(va));
  size_t tail = reinterpret_cast<uintptr_t>(va) + s->va_size + (size_t(2) << 20) -
                (s->va_base + s->va_size);
  if (tail) munmap(reinterpret_cast<void*>(s->va_base + s->va_size), tail);
  s->va.init(s->va_base, s->va_size);
  for (int i = 0; i < s->ndev; i++) {
    auto d = std::make_unique<Device>();
    d->ctx.dev = i;
    d->peer_enabled.assign(size_t(s->ndev), false);
    s->devs.push_back(std::move(d));
  }
  g = s.release();
  return CUDA_SUCCESS;
}

}  // namespace sim

// Test hook: replace the timing model at run time (see cudasim.h).
extern "C" __attribute__((visibility("default"))) int gdrpipe_sim_set_topology(const char* spec) {
  using namespace sim;
  Lock lk(g_mu);
  if (!g || !spec) return -1;
  Topology t;
  std::string err;
  if (!parse_topology("fast", t, err) || !parse_topology(spec, t, err)) {
    fprintf(stderr, "cudasim: topology: %s\n", err.c_str());
    return -1;
  }
  g->topo = t;
  g->link_free.clear();
  return 0;
}

// Test hook: what is live in this process (see cudasim.h).
extern "C" __attribute__((visibility("default"))) int gdrpipe_sim_get_counts(
    struct gdrpipe_sim_counts* out) {
  using namespace sim;
  if (!out) return -1;
  *out = {};
  Lock lk(g_mu);
  if (!g) return 0;
  for (const auto& [base, a] : g->allocs) {
    switch (a->kind) {
      case Kind::PinnedHost:
      case Kind::Registered: out->host_allocs++; break;
      case Kind::IpcImport:
      case Kind::PoolImport: out->ipc_imports++; break;
      case Kind::Pool: out->device_allocs += a->pool_freed ? 0 : 1; break;
      default: out->device_allocs++; break;
    }
  }
  for (const auto& [p, s] : g->streams) out->streams += s->legacy || s->per_thread ? 0 : 1;
  out->events = long(g->events.size());
  out->phys = long(g->phys.size());
  for (const Pool* p : g->pools) out->user_pools += p->is_default ? 0 : 1;
  for (const auto& d : g->devs) out->primary_refs += d->primary_refs;
  return 0;
}

extern "C" __attribute__((visibility("default"))) int gdrpipe_sim_virtual_clock(double* now_s) {
  sim::Lock lk(sim::g_mu);
  if (!sim::g || !sim::g->virtual_clock) return 0;
  if (now_s) *now_s = sim::g->host_vt;
  return 1;
}
