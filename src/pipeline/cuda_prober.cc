#include "gdrpipe/pipeline/cuda_prober.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gdrpipe::pipeline {
namespace {

// the steady clock, or the simulator's modeled clock (deterministic tests)
double now_s() { return cuda::driver().timing_now(); }

// Stream slot of the probes: 0 copy transport, 1-3 the data paths (engine.cc).
constexpr unsigned kSlot = 4;

const cuda::Api &api() { return cuda::driver().api(); }

} // namespace

std::unique_ptr<CudaProber> CudaProber::create(const ProberConfig &cfg, std::string *err) {
    std::unique_ptr<CudaProber> p(new CudaProber(cfg));
    if (!p->setup(err)) return nullptr;
    return p;
}

CudaProber::~CudaProber() { release_all(); }

bool CudaProber::check(CUresult r, const char *what) {
    if (r == CUDA_SUCCESS) return true;
    if (first_error_.empty()) first_error_ = std::string(what) + ": " + cuda::describe(r);
    return false;
}

bool CudaProber::setup(std::string *err) {
    auto fail = [&](const std::string &m) {
        if (err != nullptr) *err = m.empty() ? first_error_ : m;
        return false;
    };
    cuda::Driver &drv = cuda::driver();
    if (!drv.available()) return fail("CUDA is not available: " + drv.why_not());
    cuda::DeviceManager &dm = cuda::devices();
    const int n = dm.count();
    if (cfg_.to_host && cfg_.from_host) return fail("host memory on both sides: nothing to probe");
    if (cfg_.from_host) {
        if (cfg_.dev_b < 0 || cfg_.dev_b >= n)
            return fail("device " + std::to_string(cfg_.dev_b) + " does not exist (" + std::to_string(n) +
                        " device(s))");
        if (!check(dm.stream(cfg_.dev_b, kSlot, &stream_b_), "stream on B")) return fail("");
        if (!ensure_capacity(std::max<std::size_t>(cfg_.capacity, 1))) return fail("");
        return true;
    }
    if (cfg_.dev_a < 0 || cfg_.dev_a >= n)
        return fail("device " + std::to_string(cfg_.dev_a) + " does not exist (" + std::to_string(n) +
                    " device(s))");
    if (!cfg_.to_host) {
        if (n < 2) return fail("a device pair needs 2 devices, this machine has " + std::to_string(n));
        if (cfg_.dev_b < 0 || cfg_.dev_b >= n)
            return fail("device " + std::to_string(cfg_.dev_b) + " does not exist (" +
                        std::to_string(n) + " device(s))");
        if (cfg_.dev_b == cfg_.dev_a) return fail("the two devices must differ");
        peer_ = dm.can_access_peer(cfg_.dev_a, cfg_.dev_b);
        if (peer_) {
            if (!check(dm.enable_peer_access(cfg_.dev_a, cfg_.dev_b), "enable peer access A->B") ||
                !check(dm.enable_peer_access(cfg_.dev_b, cfg_.dev_a), "enable peer access B->A")) {
                // keep going: the direct path just reports failures
                peer_ = false;
                first_error_.clear();
            }
        }
        if (!check(dm.stream(cfg_.dev_b, kSlot, &stream_b_), "stream on B")) return fail("");
    }
    if (!check(dm.stream(cfg_.dev_a, kSlot, &stream_a_), "stream on A")) return fail("");
    if (!ensure_capacity(std::max<std::size_t>(cfg_.capacity, 1))) return fail("");
    return true;
}

bool CudaProber::ensure_capacity(std::size_t bytes) {
    if (bytes <= cap_) return true;
    drain();
    cuda::DeviceManager &dm = cuda::devices();
    if (src_ != 0) {
        cuda::ScopedContext c(dm, cfg_.dev_a);
        api().cuMemFree(src_);
        src_ = 0;
    }
    if (dst_dev_ != 0) {
        cuda::ScopedContext c(dm, cfg_.dev_b);
        api().cuMemFree(dst_dev_);
        dst_dev_ = 0;
    }
    std::free(dst_host_);
    std::free(src_host_);
    dst_host_ = src_host_ = nullptr;
    cap_ = 0;
    if (cfg_.from_host) {
        src_host_ = std::malloc(bytes);
        if (src_host_ == nullptr) return check(CUDA_ERROR_OUT_OF_MEMORY, "malloc source");
        std::memset(src_host_, 0x5a, bytes); // fault the pages in before timing
    } else {
        cuda::ScopedContext c(dm, cfg_.dev_a);
        if (!check(c.status(), "make device A current") || !check(api().cuMemAlloc(&src_, bytes), "cuMemAlloc on A"))
            return false;
        if (!check(api().cuMemsetD8(src_, 0x5a, bytes), "cuMemsetD8 on A")) return false;
    }
    if (cfg_.to_host) {
        dst_host_ = std::malloc(bytes);
        if (dst_host_ == nullptr) return check(CUDA_ERROR_OUT_OF_MEMORY, "malloc destination");
        std::memset(dst_host_, 0, bytes); // fault the pages in before timing
    } else {
        cuda::ScopedContext c(dm, cfg_.dev_b);
        if (!check(c.status(), "make device B current") ||
            !check(api().cuMemAlloc(&dst_dev_, bytes), "cuMemAlloc on B"))
            return false;
    }
    cap_ = bytes;
    return true;
}

bool CudaProber::ensure_ring(std::size_t chunk, int depth) {
    const std::size_t need = chunk * static_cast<std::size_t>(depth);
    if (need <= ring_cap_) return true;
    drain();
    cuda::ScopedContext c(cuda::devices(), ring_dev());
    if (!check(c.status(), "make the ring's device current")) return false;
    if (ring_ != nullptr) {
        api().cuMemFreeHost(ring_);
        ring_ = nullptr;
        ring_cap_ = 0;
    }
    // portable: pinned for B's context as well
    if (!check(api().cuMemHostAlloc(&ring_, need, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc ring")) {
        ring_ = nullptr;
        return false;
    }
    std::memset(ring_, 0, need);
    ring_cap_ = need;
    warm_staged_ = false; // first use of new pinned pages is not timed
    return true;
}

bool CudaProber::ensure_events(int depth) {
    cuda::DeviceManager &dm = cuda::devices();
    while (!cfg_.from_host && static_cast<int>(first_done_.size()) < depth) {
        CUevent ev = nullptr;
        if (!check(dm.acquire_event(cfg_.dev_a, &ev), "event on A")) return false;
        first_done_.push_back(ev);
    }
    while (!cfg_.to_host && static_cast<int>(second_done_.size()) < depth) {
        CUevent ev = nullptr;
        if (!check(dm.acquire_event(cfg_.dev_b, &ev), "event on B")) return false;
        second_done_.push_back(ev);
    }
    return true;
}

void CudaProber::drain() noexcept {
    if (stream_a_ != nullptr) api().cuStreamSynchronize(stream_a_);
    if (stream_b_ != nullptr) api().cuStreamSynchronize(stream_b_);
}

void CudaProber::release_all() noexcept {
    if (!cuda::driver().available()) return;
    drain();
    cuda::DeviceManager &dm = cuda::devices();
    for (CUevent ev : first_done_) dm.release_event(cfg_.dev_a, ev);
    for (CUevent ev : second_done_) dm.release_event(cfg_.dev_b, ev);
    first_done_.clear();
    second_done_.clear();
    if (src_ != 0) {
        cuda::ScopedContext c(dm, cfg_.dev_a);
        api().cuMemFree(src_);
    }
    if (ring_ != nullptr) {
        cuda::ScopedContext c(dm, ring_dev());
        api().cuMemFreeHost(ring_);
    }
    if (dst_dev_ != 0) {
        cuda::ScopedContext c(dm, cfg_.dev_b);
        api().cuMemFree(dst_dev_);
    }
    std::free(dst_host_);
    std::free(src_host_);
    src_ = dst_dev_ = 0;
    ring_ = dst_host_ = src_host_ = nullptr;
    cap_ = ring_cap_ = 0;
}

std::optional<double> CudaProber::time_once(model::Path p, std::size_t bytes,
                                            const model::PipelineParams &pp) {
    if (bytes == 0 || !ensure_capacity(bytes)) return std::nullopt;
    if (p == model::Path::direct) {
        if (!cfg_.to_host && !cfg_.from_host && !peer_) return std::nullopt;
        if (!warm_direct_) {
            if (!run_direct(std::min<std::size_t>(bytes, 1 << 20))) return std::nullopt;
            warm_direct_ = true;
        }
        return run_direct(bytes);
    }
    if (pp.chunk_bytes == 0 || pp.depth < 1) return std::nullopt;
    if (!ensure_ring(pp.chunk_bytes, pp.depth) || !ensure_events(pp.depth)) return std::nullopt;
    if (!warm_staged_) {
        // touches every ring slot once
        const std::size_t w = std::min(cap_, pp.chunk_bytes * static_cast<std::size_t>(pp.depth));
        if (!run_staged(w, pp)) return std::nullopt;
        warm_staged_ = true;
    }
    return run_staged(bytes, pp);
}

std::optional<double> CudaProber::run_direct(std::size_t bytes) {
    cuda::DeviceManager &dm = cuda::devices();
    const cuda::Api &a = api();
    if (cfg_.from_host) {
        cuda::ScopedContext c(dm, cfg_.dev_b);
        if (!check(c.status(), "make device B current")) return std::nullopt;
        const double t0 = now_s();
        if (!check(a.cuMemcpyHtoDAsync(dst_dev_, src_host_, bytes, stream_b_), "direct copy")) {
            drain();
            return std::nullopt;
        }
        if (!check(a.cuStreamSynchronize(stream_b_), "direct copy (synchronize)")) return std::nullopt;
        return now_s() - t0;
    }
    cuda::ScopedContext c(dm, cfg_.dev_a);
    if (!check(c.status(), "make device A current")) return std::nullopt;
    const double t0 = now_s();
    CUresult r;
    if (cfg_.to_host) {
        r = a.cuMemcpyDtoHAsync(dst_host_, src_, bytes, stream_a_);
    } else {
        CUcontext ca = nullptr, cb = nullptr;
        dm.primary_context(cfg_.dev_a, &ca);
        dm.primary_context(cfg_.dev_b, &cb);
        r = a.cuMemcpyPeerAsync(dst_dev_, cb, src_, ca, bytes, stream_a_);
    }
    if (!check(r, "direct copy")) {
        drain();
        return std::nullopt;
    }
    if (!check(a.cuStreamSynchronize(stream_a_), "direct copy (synchronize)")) return std::nullopt;
    return now_s() - t0;
}

std::optional<double> CudaProber::run_staged(std::size_t bytes, const model::PipelineParams &pp) {
    cuda::DeviceManager &dm = cuda::devices();
    const cuda::Api &a = api();
    const std::size_t chunk = pp.chunk_bytes;
    const std::size_t depth = static_cast<std::size_t>(pp.depth);
    const std::size_t nchunks = (bytes + chunk - 1) / chunk;
    auto *ring = static_cast<unsigned char *>(ring_);
    auto *dst_host = static_cast<unsigned char *>(dst_host_);
    auto len_of = [&](std::size_t i) { return std::min(chunk, bytes - i * chunk); };

    // Stage 1 of chunk i (and, between devices, its stage 2, ordered after
    // stage 1 by an event wait on B's stream).
    auto issue = [&](std::size_t i) -> bool {
        const std::size_t slot = i % depth;
        const std::size_t off = i * chunk, len = len_of(i);
        unsigned char *buf = ring + slot * chunk;
        if (cfg_.from_host) {
            // the slot is free: its previous chunk's H2D completed (complete())
            std::memcpy(buf, static_cast<const unsigned char *>(src_host_) + off, len);
        } else {
            cuda::ScopedContext c(dm, cfg_.dev_a);
            if (!check(c.status(), "make device A current") ||
                !check(a.cuMemcpyDtoHAsync(buf, src_ + off, len, stream_a_), "staged D2H") ||
                !check(a.cuEventRecord(first_done_[slot], stream_a_), "record D2H event"))
                return false;
        }
        if (cfg_.to_host) return true;
        cuda::ScopedContext c(dm, cfg_.dev_b);
        return check(c.status(), "make device B current") &&
               (cfg_.from_host ||
                check(a.cuStreamWaitEvent(stream_b_, first_done_[slot], 0), "wait for D2H event")) &&
               check(a.cuMemcpyHtoDAsync(dst_dev_ + off, buf, len, stream_b_), "staged H2D") &&
               check(a.cuEventRecord(second_done_[slot], stream_b_), "record H2D event");
    };
    // Wait until chunk i has fully arrived; its slot is free afterwards.
    auto complete = [&](std::size_t i) -> bool {
        const std::size_t slot = i % depth;
        if (!cfg_.to_host) return check(a.cuEventSynchronize(second_done_[slot]), "wait for H2D");
        // to_host: the second stage is this memcpy
        if (!check(a.cuEventSynchronize(first_done_[slot]), "wait for D2H")) return false;
        std::memcpy(dst_host + i * chunk, ring + slot * chunk, len_of(i));
        return true;
    };

    const double t0 = now_s();
    std::size_t issued = 0, done = 0;
    bool ok = true;
    while (ok && done < nchunks) {
        while (ok && issued < nchunks && issued < done + depth) ok = issue(issued++);
        if (ok) ok = complete(done++);
    }
    if (!ok) {
        drain();
        return std::nullopt;
    }
    return now_s() - t0;
}

} // namespace gdrpipe::pipeline
