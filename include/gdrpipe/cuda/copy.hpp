// Copies between any two pointers (host or device) for the transports.
//
// The device is inferred from the pointers (unified addressing): the device of
// the destination if it is CUDA memory, else that of the source. Two host
// pointers (pinned or not) are copied with memcpy, without the driver. The
// copy runs on a stream slot of that device's primary context. Zero-length
// copies succeed without touching the driver.
#pragma once

#include "gdrpipe/cuda/context.hpp"

#include <cuda.h>

#include <cstddef>
#include <string>

namespace gdrpipe::cuda {

struct Status {
    CUresult code = CUDA_SUCCESS;
    std::string message; // e.g. "cuMemcpyAsync(...) on device 0: CUDA_ERROR_INVALID_VALUE (invalid argument)"

    bool ok() const noexcept { return code == CUDA_SUCCESS; }
    explicit operator bool() const noexcept { return ok(); }
};

struct CopyOptions {
    int device = -1;      // -1: infer from the pointers
    unsigned slot = 0;    // stream slot (< DeviceManager::kStreamSlots)
    // copy() only: use the driver's synchronous cuMemcpy instead of an async
    // copy on the slot's stream plus a stream synchronize. It is ordered with
    // the context's legacy default stream (where an application's pageable
    // copies into pool/VMM memory may still be in flight). cuMemcpy returns
    // before device-to-device and pageable host-to-device copies land, so
    // copy() then also synchronizes the legacy stream when the destination
    // is (or may be) device memory: it returns once the data has landed.
    // (Timing cuMemcpy's return alone makes this mode look faster; with the
    // wait it is slower.) With device < 0 copy()
    // decides by itself: device to host only, where cuMemcpy is synchronous.
    bool sync_api = false;
    // With device < 0: the side the caller knows to be device memory
    // (CUDA-managed counts), checked against the driver before anything is
    // copied. A pointer the driver does not know (memory freed while a
    // transfer was in flight) would otherwise be taken for host memory and
    // copied with memcpy, which faults on a freed device address. The copy
    // then fails with CUDA_ERROR_NOT_MAPPED and copies nothing.
    enum class Expect : unsigned char { any, dst_device, src_device };
    Expect expect = Expect::any;
};

// Copy and wait for completion.
Status copy(void *dst, const void *src, std::size_t len, CopyOptions opt = {},
            DeviceManager &dm = devices());

// Completion token of an asynchronous copy: an event recorded on the stream
// after the copy. A token with a null event is already complete.
struct CopyToken {
    int device = -1;
    unsigned slot = 0; // the stream slot it runs on (copies of a slot complete in order)
    CUevent event = nullptr;

    bool empty() const noexcept { return event == nullptr; }
};

// Start a copy; `*token` completes once the data has landed.
Status copy_async(void *dst, const void *src, std::size_t len, CopyToken *token,
                  CopyOptions opt = {}, DeviceManager &dm = devices());

// An event recorded on `stream` (of `device`'s stream `slot`) into *token,
// after the work queued there so far; if it cannot be recorded, waits for
// the stream and returns why.
Status track(int device, unsigned slot, CUstream stream, CopyToken *token,
             DeviceManager &dm = devices());

enum class PollResult { done, pending, error };

// Check a token without blocking. On done or error the event returns to the
// pool and the token is emptied; on error *err (if given) says why.
PollResult poll(CopyToken &token, Status *err = nullptr, DeviceManager &dm = devices());
// Block until the token completes (then as poll).
Status wait(CopyToken &token, DeviceManager &dm = devices());

} // namespace gdrpipe::cuda
