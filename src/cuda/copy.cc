// Synchronous and event-tracked asynchronous copies.
#include "gdrpipe/cuda/copy.hpp"

#include "gdrpipe/cuda/memory.hpp"

#include <cstdio>
#include <cstring>

namespace gdrpipe::cuda {
namespace {

Status failure(CUresult r, const char *what, int device) {
    char head[160];
    std::snprintf(head, sizeof(head), "%s on device %d: ", what, device);
    return Status{r, head + describe(r)};
}

// Device to run a copy on: -1 (with ok status) when both sides are host memory.
// *sync_api: whether the synchronous API is the faster way (see CopyOptions).
// *dst_device: the destination may be device memory (unknown: true).
Status pick_device(void *dst, const void *src, const CopyOptions &opt, DeviceManager &dm,
                   int *device, bool *sync_api, bool *dst_device) {
    *device = opt.device;
    *sync_api = opt.sync_api;
    *dst_device = true;
    if (opt.device >= 0) return {};
    const Driver &drv = dm.drv();
    MemInfo di, si; // kind and device only
    CUresult r = query_kind(dst, &di, drv);
    if (r != CUDA_SUCCESS) return failure(r, "cuPointerGetAttributes", -1);
    if (opt.expect == CopyOptions::Expect::dst_device && di.kind != MemKind::host) {
        // the expected device destination (a copy transport's put, UCP's
        // unpack): the copy runs on its device whatever the source is
        *sync_api = false;
        *device = di.device < 0 ? 0 : di.device;
        return {};
    }
    r = query_kind(src, &si, drv);
    if (r != CUDA_SUCCESS) return failure(r, "cuPointerGetAttributes", -1);
    // The synchronous API only where it is synchronous by itself: device to
    // host (cuMemcpy returns once the data landed; it is also ordered after
    // the legacy stream, where an application's pageable copies into pool or
    // VMM memory may still be in flight). Everywhere else cuMemcpy returns
    // early and would need a legacy-stream wait, which measured slower than
    // an async copy plus a stream synchronize on the H200 pair (gdrpipe_physref
    // "single": H2D pageable 8 B 9.1 against 7.2 us).
    const bool dst_missing = opt.expect == CopyOptions::Expect::dst_device && di.kind == MemKind::host;
    const bool src_missing = opt.expect == CopyOptions::Expect::src_device && si.kind == MemKind::host;
    if (dst_missing || src_missing) {
        char what[160];
        std::snprintf(what, sizeof(what),
                      "%s %p is not device memory (freed while a transfer was in flight?)",
                      dst_missing ? "destination" : "source", dst_missing ? dst : src);
        return Status{CUDA_ERROR_NOT_MAPPED, what};
    }
    *sync_api = di.kind == MemKind::host && si.kind != MemKind::host;
    *dst_device = di.kind != MemKind::host;
    if (di.kind != MemKind::host) {
        *device = di.device;
    } else if (si.kind != MemKind::host) {
        *device = si.device;
    } else {
        *device = -1; // host to host
        return {};
    }
    if (*device < 0) *device = 0;
    return {};
}

// Run the copy on the device's stream slot, all under its context; then
// either wait for it (token null) or record an event for *token.
Status run(void *dst, const void *src, std::size_t len, const CopyOptions &opt,
           DeviceManager &dm, CopyToken *token) {
    if (token != nullptr) *token = CopyToken{};
    if (len == 0) return {};
    int device = -1;
    bool sync_api = false, dst_device = true;
    Status st = pick_device(dst, src, opt, dm, &device, &sync_api, &dst_device);
    if (!st.ok()) return st;
    if (device < 0) {
        std::memcpy(dst, src, len);
        return {};
    }
    const Api &api = dm.drv().api();
    ScopedContext scope(dm, device);
    if (!scope.ok()) return failure(scope.status(), "making the context current", device);
    if (token == nullptr && sync_api) {
        CUresult r = api.cuMemcpy(reinterpret_cast<CUdeviceptr>(dst),
                                  reinterpret_cast<CUdeviceptr>(src), len);
        // cuMemcpy returns before the data has landed for device-to-device
        // copies and for pageable host-to-device ones (CUDA's "API
        // synchronization behavior"): a copy that completes a transfer must
        // have landed (the peer may read it next, or unmap its source)
        if (r == CUDA_SUCCESS && dst_device) r = api.cuStreamSynchronize(CU_STREAM_LEGACY);
        if (r == CUDA_SUCCESS) return {};
        char what[128];
        std::snprintf(what, sizeof(what), "cuMemcpy(%p <- %p, %zu)", dst, src, len);
        return failure(r, what, device);
    }
    CUstream stream = nullptr;
    CUresult r = dm.stream(device, opt.slot, &stream);
    if (r != CUDA_SUCCESS) return failure(r, "cuStreamCreate", device);
    r = api.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                          reinterpret_cast<CUdeviceptr>(src), len, stream);
    if (r != CUDA_SUCCESS) {
        char what[128];
        std::snprintf(what, sizeof(what), "cuMemcpyAsync(%p <- %p, %zu)", dst, src, len);
        return failure(r, what, device);
    }
    if (token == nullptr) {
        r = api.cuStreamSynchronize(stream);
        if (r != CUDA_SUCCESS) return failure(r, "cuStreamSynchronize", device);
        return {};
    }
    return track(device, opt.slot, stream, token, dm);
}

} // namespace

Status track(int device, unsigned slot, CUstream stream, CopyToken *token, DeviceManager &dm) {
    CUevent ev = nullptr;
    CUresult r = dm.acquire_event(device, &ev);
    if (r == CUDA_SUCCESS) {
        r = dm.drv().api().cuEventRecord(ev, stream);
        if (r == CUDA_SUCCESS) {
            token->device = device;
            token->slot = slot;
            token->event = ev;
            return {};
        }
        dm.release_event(device, ev);
    }
    // the work is queued but cannot be tracked: wait for it here
    Status fail = failure(r, ev == nullptr ? "cuEventCreate" : "cuEventRecord", device);
    dm.drv().api().cuStreamSynchronize(stream);
    return fail;
}

Status copy(void *dst, const void *src, std::size_t len, CopyOptions opt, DeviceManager &dm) {
    return run(dst, src, len, opt, dm, nullptr);
}

Status copy_async(void *dst, const void *src, std::size_t len, CopyToken *token,
                  CopyOptions opt, DeviceManager &dm) {
    return run(dst, src, len, opt, dm, token);
}

PollResult poll(CopyToken &token, Status *err, DeviceManager &dm) {
    if (token.event == nullptr) return PollResult::done;
    CUresult r = dm.drv().api().cuEventQuery(token.event);
    if (r == CUDA_ERROR_NOT_READY) return PollResult::pending;
    dm.release_event(token.device, token.event);
    const int device = token.device;
    token = CopyToken{};
    if (r == CUDA_SUCCESS) return PollResult::done;
    if (err != nullptr) *err = failure(r, "cuEventQuery", device);
    return PollResult::error;
}

Status wait(CopyToken &token, DeviceManager &dm) {
    if (token.event == nullptr) return {};
    CUresult r = dm.drv().api().cuEventSynchronize(token.event);
    const int device = token.device;
    dm.release_event(device, token.event);
    token = CopyToken{};
    if (r != CUDA_SUCCESS) return failure(r, "cuEventSynchronize", device);
    return {};
}

} // namespace gdrpipe::cuda
