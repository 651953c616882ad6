// Streams (one worker thread each), events and the copy engine.
#include <algorithm>
#include <cstring>

#include "sim_internal.hpp"

namespace sim {

namespace {

struct ThreadStreams {
  uint64_t gen = 0;
  std::map<Ctx*, Stream*> m;
};
thread_local ThreadStreams t_streams;
State* t_streams_owner = nullptr;

void worker(Stream* s) {
  Lock lk(g_mu);
  State* st = g;
  for (;;) {
    s->work.wait(lk, [&] { return !s->q.empty() || s->stop; });
    if (s->q.empty()) break;
    Op op = std::move(s->q.front());
    s->q.pop_front();
    for (auto& dep : op.deps) st->cv.wait(lk, dep);
    lk.unlock();
    if (op.fn) op.fn();
    op = Op();  // drop keep-alive references outside the lock
    lk.lock();
    s->done++;
    st->cv.notify_all();
  }
}

}  // namespace

Stream* new_stream(Ctx* ctx, unsigned flags, bool legacy, bool per_thread) {
  auto s = std::make_shared<Stream>();
  s->ctx = ctx;
  s->flags = flags;
  s->legacy = legacy;
  s->per_thread = per_thread;
  s->th = std::thread(worker, s.get());
  g->streams[s.get()] = s;
  return s.get();
}

void stream_wait_idle(Lock& lk, Stream* s) {
  uint64_t target = s->enq;
  const double v_end = s->v_end;
  g->cv.wait(lk, [&] { return s->done >= target; });
  vt_seen(v_end);
}

void vt_seen(double t) {
  if (g->virtual_clock && t > g->host_vt) g->host_vt = t;
}

void stop_stream(Lock& lk, const std::shared_ptr<Stream>& s) {
  stream_wait_idle(lk, s.get());
  s->stop = true;
  s->work.notify_one();
  lk.unlock();
  s->th.join();
  lk.lock();
}

CUresult get_stream(CUstream h, bool per_thread, Stream** out) {
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (h == CU_STREAM_PER_THREAD || (h == nullptr && per_thread)) {
    if (t_streams.gen != reinterpret_cast<uintptr_t>(g) || t_streams_owner != g) {
      t_streams.m.clear();
      t_streams.gen = reinterpret_cast<uintptr_t>(g);
      t_streams_owner = g;
    }
    Stream*& s = t_streams.m[c];
    if (!s || !g->streams.count(s)) s = new_stream(c, 0, false, true);
    *out = s;
    return CUDA_SUCCESS;
  }
  if (h == nullptr || h == CU_STREAM_LEGACY) {
    if (!c->legacy) {
      Stream* s = new_stream(c, 0, true, false);
      c->legacy = g->streams[s];
    }
    *out = c->legacy.get();
    return CUDA_SUCCESS;
  }
  auto it = g->streams.find(reinterpret_cast<Stream*>(h));
  if (it == g->streams.end()) return CUDA_ERROR_INVALID_HANDLE;
  *out = it->first;
  return CUDA_SUCCESS;
}

// Appends an op; implements the legacy default stream's implicit
// synchronization with the blocking streams of its context.
void enqueue(Stream* s, Op op) {
  // the predicate keeps the other stream alive (it may be destroyed meanwhile)
  auto after = [](std::shared_ptr<Stream> o) {
    uint64_t t = o->enq;
    return [o, t] { return o->done >= t; };
  };
  double v_start = std::max({g->host_vt, s->v_end, op.v_after});
  if (s->legacy) {
    for (auto& kv : g->streams) {
      Stream* o = kv.first;
      if (o != s && o->ctx == s->ctx && !(o->flags & CU_STREAM_NON_BLOCKING) && o->enq > o->done) {
        op.deps.push_back(after(kv.second));
        v_start = std::max(v_start, o->v_end);
      }
    }
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && s->ctx->legacy) {
    Stream* l = s->ctx->legacy.get();
    if (l->enq > l->done) {
      op.deps.push_back(after(s->ctx->legacy));
      v_start = std::max(v_start, l->v_end);
    }
  }
  // virtual clock: the op's modeled start and end follow from what precedes
  // it in issue order (stream, waited events, its link), never from when a
  // worker thread happens to run it
  if (op.v_link != 0) {
    double& free_at = g->link_vfree[op.v_link];
    v_start = std::max(v_start, free_at);
    free_at = v_start + op.v_busy;
  }
  s->v_end = v_start + op.v_busy + op.v_lat;
  s->q.push_back(std::move(op));
  s->enq++;
  s->work.notify_one();
}

}  // namespace sim

using namespace sim;

// ---------------------------------------------------------------- streams --
SIM_API CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (!phStream || (Flags & ~unsigned(CU_STREAM_NON_BLOCKING))) return CUDA_ERROR_INVALID_VALUE;
  *phStream = reinterpret_cast<CUstream>(new_stream(c, Flags, false, false));
  return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream h) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  auto it = g->streams.find(reinterpret_cast<Stream*>(h));
  if (!h || it == g->streams.end() || it->first->legacy || it->first->per_thread)
    return CUDA_ERROR_INVALID_HANDLE;
  auto s = it->second;
  g->streams.erase(it);
  stop_stream(lk, s);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamDestroy(CUstream h) { return stream_destroy(h); }
SIM_API CUresult cuStreamDestroy_v2(CUstream h) { return stream_destroy(h); }

static CUresult stream_sync(CUstream h, bool pt) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, pt, &s)) return r;
  auto keep = g->streams[s];
  stream_wait_idle(lk, s);
  trim_all_pools();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamSynchronize(CUstream h) { return stream_sync(h, false); }
SIM_API CUresult cuStreamSynchronize_ptsz(CUstream h) { return stream_sync(h, true); }

static CUresult stream_query(CUstream h, bool pt) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, pt, &s)) return r;
  if (s->done < s->enq) return CUDA_ERROR_NOT_READY;
  vt_seen(s->v_end);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamQuery(CUstream h) { return stream_query(h, false); }
SIM_API CUresult cuStreamQuery_ptsz(CUstream h) { return stream_query(h, true); }

SIM_API CUresult cuCtxSynchronize(void) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  std::vector<std::shared_ptr<Stream>> mine;
  for (auto& kv : g->streams)
    if (kv.first->ctx == c) mine.push_back(kv.second);
  for (auto& s : mine) stream_wait_idle(lk, s.get());
  trim_all_pools();
  return CUDA_SUCCESS;
}

// ----------------------------------------------------------------- events --
static Event* to_event(CUevent e) {
  auto* ev = reinterpret_cast<Event*>(e);
  return g && g->events.count(ev) ? ev : nullptr;
}

SIM_API CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  Lock lk(g_mu);
  Ctx* c;
  if (CUresult r = need_ctx(&c)) return r;
  if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
  auto* ev = new Event;
  ev->st = std::make_shared<EventState>();
  ev->st->flags = Flags;
  g->events.insert(ev);
  *phEvent = reinterpret_cast<CUevent>(ev);
  return CUDA_SUCCESS;
}

static CUresult event_destroy(CUevent e) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Event* ev = to_event(e);
  if (!ev) return CUDA_ERROR_INVALID_HANDLE;
  g->events.erase(ev);
  delete ev;  // pending ops keep the shared state alive
  return CUDA_SUCCESS;
}

SIM_API CUresult cuEventDestroy(CUevent e) { return event_destroy(e); }
SIM_API CUresult cuEventDestroy_v2(CUevent e) { return event_destroy(e); }

static CUresult event_record(CUevent e, CUstream h, bool pt) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, pt, &s)) return r;
  Event* ev = to_event(e);
  if (!ev) return CUDA_ERROR_INVALID_HANDLE;
  auto st = ev->st;
  uint64_t epoch = ++st->rec;
  Op op;
  const bool virt = g->virtual_clock;
  op.fn = [st, epoch, virt] {
    double t = virt ? 0 : now_s();
    std::lock_guard<std::mutex> l(g_mu);
    if (st->done < epoch) {
      st->done = epoch;
      st->t = t;
    }
  };
  enqueue(s, std::move(op));
  st->vt = s->v_end;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuEventRecord(CUevent e, CUstream h) { return event_record(e, h, false); }
SIM_API CUresult cuEventRecord_ptsz(CUevent e, CUstream h) { return event_record(e, h, true); }

SIM_API CUresult cuEventQuery(CUevent e) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Event* ev = to_event(e);
  if (!ev) return CUDA_ERROR_INVALID_HANDLE;
  if (ev->st->done < ev->st->rec) return CUDA_ERROR_NOT_READY;
  vt_seen(ev->st->vt);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuEventSynchronize(CUevent e) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Event* ev = to_event(e);
  if (!ev) return CUDA_ERROR_INVALID_HANDLE;
  auto st = ev->st;
  uint64_t target = st->rec;
  const double vt = st->vt;
  g->cv.wait(lk, [&] { return st->done >= target; });
  vt_seen(vt);
  trim_all_pools();
  return CUDA_SUCCESS;
}

static CUresult elapsed(float* ms, CUevent a, CUevent b) {
  Lock lk(g_mu);
  if (CUresult r = check_init()) return r;
  Event *ea = to_event(a), *eb = to_event(b);
  if (!ms || !ea || !eb) return CUDA_ERROR_INVALID_HANDLE;
  if ((ea->st->flags | eb->st->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!ea->st->rec || !eb->st->rec) return CUDA_ERROR_INVALID_HANDLE;
  if (ea->st->done < ea->st->rec || eb->st->done < eb->st->rec) return CUDA_ERROR_NOT_READY;
  *ms = g->virtual_clock ? float((eb->st->vt - ea->st->vt) * 1e3)
                         : float((eb->st->t - ea->st->t) * 1e3);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
SIM_API CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }

static CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, bool pt) {
  Lock lk(g_mu);
  Stream* s;
  if (CUresult r = get_stream(h, pt, &s)) return r;
  Event* ev = to_event(e);
  if (!ev) return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL)) return CUDA_ERROR_INVALID_VALUE;
  Op op;
  auto st = ev->st;
  uint64_t epoch = st->rec;
  if (epoch) {
    op.deps.push_back([st, epoch] { return st->done >= epoch; });
    op.v_after = st->vt;
  }
  enqueue(s, std::move(op));
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int f) {
  return stream_wait_event(h, e, f, false);
}
SIM_API CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int f) {
  return stream_wait_event(h, e, f, true);
}
