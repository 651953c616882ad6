// The copy engine: validates both ends of a copy against the allocation
// table, picks the timing path and runs the copy on a stream worker.
#include <cstring>

#include "gdrpipe/cuda/reduce_ops.hpp"

#include "sim_internal.hpp"

namespace sim {
namespace {

struct End {
  char* p = nullptr;
  bool dev = false;  // device-resident (timing), else host
  bool pageable = false;  // host memory the driver does not know (timing)
  int ordinal = -1;
  std::shared_ptr<Backing> keep;
};

enum class Want { Any, Device, Host };

CUresult resolve(uintptr_t addr, size_t n, Want want, End& e) {
  Alloc* a = find_alloc(addr);
  if (!a) {
    if (want == Want::Device) return CUDA_ERROR_INVALID_VALUE;
    // Like the driver, an address of no allocation is pageable host memory,
    // a freed device address included: copying it touches the reserved,
    // inaccessible range and the process gets SIGSEGV (as on a real GPU).
    e.p = reinterpret_cast<char*>(addr);  // pageable host memory
    e.pageable = true;
    return CUDA_SUCCESS;
  }
  if (addr + n > a->base + a->size || addr + n < addr) return CUDA_ERROR_INVALID_VALUE;
  if (!a->accessible) return CUDA_ERROR_INVALID_VALUE;
  if (!a->is_device_memory()) {
    if (want == Want::Device && a->kind != Kind::PinnedHost && a->kind != Kind::Registered)
      return CUDA_ERROR_INVALID_VALUE;
    e.p = reinterpret_cast<char*>(addr);
    return CUDA_SUCCESS;
  }
  if (want == Want::Host) return CUDA_ERROR_INVALID_VALUE;
  e.dev = true;
  e.ordinal = a->dev;
  e.keep = a->backing;
  e.p = a->backing->alias + (addr - a->base);
  return CUDA_SUCCESS;
}

bool peer_active(int a, int b) {
  if (!g->topo.can_peer(a, b)) return false;
  return g->devs[size_t(a)]->peer_enabled[size_t(b)] || g->devs[size_t(b)]->peer_enabled[size_t(a)];
}

Path pick_path(const End& s, const End& d) {
  if (!s.dev && !d.dev) return P_H2H;
  if (!s.dev) return s.pageable && g->topo.path[P_H2D_PG].set ? P_H2D_PG : P_H2D;
  if (!d.dev) return d.pageable && g->topo.path[P_D2H_PG].set ? P_D2H_PG : P_D2H;
  if (s.ordinal == d.ordinal) return P_D2D;
  return peer_active(s.ordinal, d.ordinal) ? P_PEER : P_NOPEER;
}

// Builds the op: the link of a path is shared by the copies on it (they
// serialize on its bandwidth); different links run concurrently.
Op copy_op(End s, End d, size_t n, int fill) {
  Path path = pick_path(s, d);
  // pageable and pinned copies share the device's host link
  const Path lp = path == P_H2D_PG ? P_H2D : path == P_D2H_PG ? P_D2H : path;
  uint64_t link = uint64_t(lp) << 32 | uint64_t(s.ordinal + 1) << 16 | uint64_t(d.ordinal + 1);
  Op op;
  if (g->virtual_clock) {
    // modeled time only (enqueue() places the op); the bytes move at once
    const PathModel& m = g->topo.path[path];
    op.v_busy = m.bw_Bps > 0 ? g->time_scale * double(n) / m.bw_Bps : 0;
    op.v_lat = g->time_scale * m.lat_s;
    op.v_link = link;
    op.fn = [s, d, n, fill] {
      if (fill >= 0) memset(d.p, fill, n);
      else memmove(d.p, s.p, n);
    };
    return op;
  }
  op.fn = [s, d, n, fill, path, link] {
    double t0 = now_s();
    double deadline = t0, est = 0;
    {
      std::lock_guard<std::mutex> l(g_mu);
      const PathModel m = g->topo.path[path];
      double busy = m.bw_Bps > 0 ? g->time_scale * double(n) / m.bw_Bps : 0;
      double& free_at = g->link_free[link];
      double start = free_at > t0 ? free_at : t0;
      free_at = start + busy;
      deadline = start + busy + g->time_scale * m.lat_s;
      est = double(n) / g->memcpy_Bps;
    }
    // The bytes land at the end of the modeled time (a reader that does not
    // wait for completion sees stale data), total = max(model, real memcpy).
    wait_until(deadline - est);
    double c0 = now_s();
    if (fill >= 0) memset(d.p, fill, n);
    else memmove(d.p, s.p, n);
    double c1 = now_s();
    if (n >= (size_t(1) << 20) && c1 > c0) {
      std::lock_guard<std::mutex> l(g_mu);
      g->memcpy_Bps = 0.75 * g->memcpy_Bps + 0.25 * (double(n) / (c1 - c0));
    }
    wait_until(deadline);
  };
  return op;
}

}  // namespace

CUresult do_copy(uintptr_t dst, uintptr_t src, size_t n, CUstream h, bool per_thread, bool sync,
                 Want wd, Want ws) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, per_thread, &s)) return r;
  End de, se;
  if (CUresult r = resolve(dst, n, wd, de)) return r;
  if (CUresult r = resolve(src, n, ws, se)) return r;
  if (n == 0) return CUDA_SUCCESS;
  enqueue(s, copy_op(se, de, n, -1));
  if (sync) stream_wait_idle(lk, s);
  return CUDA_SUCCESS;
}

CUresult do_copy_batch(const gp_copy_desc_t* d, unsigned n, CUstream h, bool per_thread) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, per_thread, &s)) return r;
  const int dev = s->ctx != nullptr ? s->ctx->dev : 0;
  // a kernel reaches its own device's memory, a peer's with access enabled
  // and pinned host memory; anything else is an illegal address on a GPU
  auto reachable = [dev](const End& e) {
    if (e.pageable) return false;
    return !e.dev || e.ordinal == dev || peer_active(dev, e.ordinal);
  };
  std::vector<Op> ops;
  for (unsigned i = 0; i < n; ++i) {
    End de, se;
    if (CUresult r = resolve(uintptr_t(d[i].dst), size_t(d[i].len), Want::Any, de)) return r;
    if (CUresult r = resolve(uintptr_t(d[i].src), size_t(d[i].len), Want::Any, se)) return r;
    if (!reachable(de) || !reachable(se)) return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (d[i].len != 0) ops.push_back(copy_op(se, de, size_t(d[i].len), -1));
  }
  for (Op& op : ops) enqueue(s, std::move(op));
  return CUDA_SUCCESS;
}

// gdrpipe's reduction kernel, run on the host over the memory's host
// aliases: each buffer must be reachable from the stream's device as from a
// kernel (its own memory, a peer's with access enabled, pinned host memory)
CUresult do_reduce(const gp_reduce_args_t& a, CUstream h, bool per_thread) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, per_thread, &s)) return r;
  if (a.nsrc == 0 || a.nsrc > GP_REDUCE_MAX_BUFS || a.ndst > GP_REDUCE_MAX_BUFS ||
      !gp_red_valid(a.type, a.op) || a.end < a.begin)
    return CUDA_ERROR_INVALID_VALUE;
  const int dev = s->ctx != nullptr ? s->ctx->dev : 0;
  const size_t es = gp_red_type_size(a.type);
  const size_t off = size_t(a.begin) * es, n = size_t(a.end - a.begin) * es;
  gp_reduce_args_t b = a;
  std::vector<std::shared_ptr<Backing>> keep;
  auto map = [&](unsigned long long& p) -> CUresult {
    End e;
    if (CUresult r = resolve(uintptr_t(p) + off, n ? n : 1, Want::Any, e)) return r;
    if (e.pageable || (e.dev && e.ordinal != dev && !peer_active(dev, e.ordinal)))
      return CUDA_ERROR_ILLEGAL_ADDRESS;
    p = reinterpret_cast<uintptr_t>(e.p) - off;
    if (e.keep) keep.push_back(e.keep);
    return CUDA_SUCCESS;
  };
  for (unsigned i = 0; i < b.nsrc; ++i)
    if (CUresult r = map(b.src[i])) return r;
  for (unsigned i = 0; i < b.ndst; ++i)
    if (CUresult r = map(b.dst[i])) return r;
  if (n == 0) return CUDA_SUCCESS;
  Op op;
  op.fn = [b, keep] {
    for (unsigned long long i = b.begin; i < b.end; ++i) {
      switch (b.type) {
        case GP_RED_I8: gdrpipe::cuda::red_element<signed char>(b, i); break;
        case GP_RED_U8: gdrpipe::cuda::red_element<unsigned char>(b, i); break;
        case GP_RED_I16: gdrpipe::cuda::red_element<short>(b, i); break;
        case GP_RED_U16: gdrpipe::cuda::red_element<unsigned short>(b, i); break;
        case GP_RED_I32: gdrpipe::cuda::red_element<int>(b, i); break;
        case GP_RED_U32: gdrpipe::cuda::red_element<unsigned>(b, i); break;
        case GP_RED_I64: gdrpipe::cuda::red_element<long long>(b, i); break;
        case GP_RED_U64: gdrpipe::cuda::red_element<unsigned long long>(b, i); break;
        case GP_RED_F32: gdrpipe::cuda::red_element<float>(b, i); break;
        default: gdrpipe::cuda::red_element<double>(b, i); break;
      }
    }
  };
  if (g->virtual_clock) {
    const PathModel& m = g->topo.path[P_D2D];
    op.v_busy = m.bw_Bps > 0 ? g->time_scale * double(n) * (b.nsrc + b.ndst) / m.bw_Bps : 0;
    op.v_lat = g->time_scale * m.lat_s;
  }
  enqueue(s, std::move(op));
  return CUDA_SUCCESS;
}

CUresult do_memset(uintptr_t dst, unsigned char v, size_t n, bool per_thread) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(nullptr, per_thread, &s)) return r;
  End de;
  if (CUresult r = resolve(dst, n, Want::Any, de)) return r;
  if (n == 0) return CUDA_SUCCESS;
  End se = de;
  enqueue(s, copy_op(se, de, n, v));
  stream_wait_idle(lk, s);
  return CUDA_SUCCESS;
}

}  // namespace sim

using namespace sim;
using W = sim::Want;

static uintptr_t U(CUdeviceptr p) { return uintptr_t(p); }
static uintptr_t H(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// generic (unified addressing): kind inferred from the pointers
SIM_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return do_copy(U(dst), U(src), n, nullptr, false, true, W::Any, W::Any);
}
SIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return do_copy(U(dst), U(src), n, nullptr, true, true, W::Any, W::Any);
}
SIM_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  return do_copy(U(dst), U(src), n, h, false, false, W::Any, W::Any);
}
SIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  return do_copy(U(dst), U(src), n, h, true, false, W::Any, W::Any);
}

// typed, current ABI
SIM_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  return do_copy(U(dst), H(src), n, nullptr, false, true, W::Device, W::Any);
}
SIM_API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n) {
  return do_copy(U(dst), H(src), n, nullptr, true, true, W::Device, W::Any);
}
SIM_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  return do_copy(H(dst), U(src), n, nullptr, false, true, W::Any, W::Device);
}
SIM_API CUresult cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n) {
  return do_copy(H(dst), U(src), n, nullptr, true, true, W::Any, W::Device);
}
SIM_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream h) {
  return do_copy(U(dst), H(src), n, h, false, false, W::Device, W::Any);
}
SIM_API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream h) {
  return do_copy(U(dst), H(src), n, h, true, false, W::Device, W::Any);
}
SIM_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream h) {
  return do_copy(H(dst), U(src), n, h, false, false, W::Any, W::Device);
}
SIM_API CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream h) {
  return do_copy(H(dst), U(src), n, h, true, false, W::Any, W::Device);
}
SIM_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  return do_copy(U(dst), U(src), n, h, false, false, W::Device, W::Device);
}
SIM_API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) {
  return do_copy(U(dst), U(src), n, h, true, false, W::Device, W::Device);
}

static CUresult peer_copy(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
                          CUstream h, bool pt) {
  if (!dc || !sc) return CUDA_ERROR_INVALID_CONTEXT;
  return do_copy(U(dst), U(src), n, h, pt, false, W::Device, W::Device);
}
SIM_API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc,
                                   size_t n, CUstream h) {
  return peer_copy(dst, dc, src, sc, n, h, false);
}
SIM_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
                                        CUcontext sc, size_t n, CUstream h) {
  return peer_copy(dst, dc, src, sc, n, h, true);
}

SIM_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
  return do_memset(U(dst), uc, n, false);
}
SIM_API CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char uc, size_t n) {
  return do_memset(U(dst), uc, n, true);
}

// legacy 32-bit ABI exports (CUdeviceptr_v1 / unsigned int sizes)
SIM_API CUresult cuMemcpyHtoD(CUdeviceptr_v1 dst, const void* src, unsigned int n) {
  return do_copy(dst, H(src), n, nullptr, false, true, W::Device, W::Any);
}
SIM_API CUresult cuMemcpyDtoH(void* dst, CUdeviceptr_v1 src, unsigned int n) {
  return do_copy(H(dst), src, n, nullptr, false, true, W::Any, W::Device);
}
SIM_API CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dst, const void* src, unsigned int n, CUstream h) {
  return do_copy(dst, H(src), n, h, false, false, W::Device, W::Any);
}
SIM_API CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr_v1 src, unsigned int n, CUstream h) {
  return do_copy(H(dst), src, n, h, false, false, W::Any, W::Device);
}
SIM_API CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n,
                                   CUstream h) {
  return do_copy(dst, src, n, h, false, false, W::Device, W::Device);
}
SIM_API CUresult cuMemsetD8(CUdeviceptr_v1 dst, unsigned char uc, unsigned int n) {
  return do_memset(dst, uc, n, false);
}
