// Names and short descriptions of CUresult codes (cuda.h 13.0). Kept in the
// core so that errors can be described without a working driver.
#include "gdrpipe/cuda/driver.hpp"

namespace gdrpipe::cuda {
namespace {

struct ErrorText {
    CUresult code;
    const char *name;
    const char *text;
};

#define GP_ERR(_code, _text) {_code, #_code, _text}
constexpr ErrorText kErrors[] = {
    GP_ERR(CUDA_SUCCESS, "no error"),
    GP_ERR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    GP_ERR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    GP_ERR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    GP_ERR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    GP_ERR(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled"),
    GP_ERR(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized"),
    GP_ERR(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
    GP_ERR(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
    GP_ERR(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
    GP_ERR(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "call requires a newer driver"),
    GP_ERR(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) busy or unavailable"),
    GP_ERR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    GP_ERR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    GP_ERR(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
    GP_ERR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    GP_ERR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    GP_ERR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
    GP_ERR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
    GP_ERR(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
    GP_ERR(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
    GP_ERR(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
    GP_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
    GP_ERR(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
    GP_ERR(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
    GP_ERR(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
    GP_ERR(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
    GP_ERR(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
    GP_ERR(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
    GP_ERR(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
    GP_ERR(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
    GP_ERR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    GP_ERR(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
    GP_ERR(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
    GP_ERR(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
    GP_ERR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain"),
    GP_ERR(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
    GP_ERR(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the provided execution affinity is not supported"),
    GP_ERR(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "device-side synchronization is not supported"),
    GP_ERR(CUDA_ERROR_CONTAINED, "an exception occurred on the device and was contained"),
    GP_ERR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    GP_ERR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    GP_ERR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
    GP_ERR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
    GP_ERR(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
    GP_ERR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    GP_ERR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
    GP_ERR(CUDA_ERROR_LOSSY_QUERY, "attempted introspection would be semantically lossy"),
    GP_ERR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    GP_ERR(CUDA_ERROR_NOT_READY, "device not ready"),
    GP_ERR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
    GP_ERR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
    GP_ERR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
    GP_ERR(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
    GP_ERR(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
    GP_ERR(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
    GP_ERR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
    GP_ERR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    GP_ERR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    GP_ERR(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
    GP_ERR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
    GP_ERR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
    GP_ERR(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
    GP_ERR(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
    GP_ERR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    GP_ERR(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
    GP_ERR(CUDA_ERROR_INVALID_PC, "invalid program counter"),
    GP_ERR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    GP_ERR(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
    GP_ERR(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory not completely freed"),
    GP_ERR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
    GP_ERR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    GP_ERR(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
    GP_ERR(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
    GP_ERR(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
    GP_ERR(CUDA_ERROR_MPS_CONNECTION_FAILED, "MPS client failed to connect to the MPS control daemon or the MPS server"),
    GP_ERR(CUDA_ERROR_MPS_RPC_FAILURE, "the remote procedural call between the MPS server and the MPS client failed"),
    GP_ERR(CUDA_ERROR_MPS_SERVER_NOT_READY, "MPS server is not ready to accept new MPS client requests"),
    GP_ERR(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the hardware resources required to create MPS client have been exhausted"),
    GP_ERR(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the hardware resources required to support device connections have been exhausted"),
    GP_ERR(CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client has been terminated by the server"),
    GP_ERR(CUDA_ERROR_CDP_NOT_SUPPORTED, "CDP is not supported in this configuration"),
    GP_ERR(CUDA_ERROR_CDP_VERSION_MISMATCH, "CDP version mismatch"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
    GP_ERR(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
    GP_ERR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
    GP_ERR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
    GP_ERR(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"),
    GP_ERR(CUDA_ERROR_EXTERNAL_DEVICE, "an async error has occurred in external entity outside of CUDA"),
    GP_ERR(CUDA_ERROR_INVALID_CLUSTER_SIZE, "a kernel launch error has occurred due to cluster misconfiguration"),
    GP_ERR(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function handle is not loaded when calling an API that requires a loaded function"),
    GP_ERR(CUDA_ERROR_INVALID_RESOURCE_TYPE, "one or more resources passed in are not valid resource types for the operation"),
    GP_ERR(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "one or more resources are insufficient or non-applicable for the operation"),
    GP_ERR(CUDA_ERROR_KEY_ROTATION, "an error happened during the key rotation sequence"),
    GP_ERR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef GP_ERR

const ErrorText *find(CUresult r) noexcept {
    for (const ErrorText &e : kErrors) {
        if (e.code == r) return &e;
    }
    return nullptr;
}

} // namespace

const char *error_name(CUresult r) noexcept {
    const ErrorText *e = find(r);
    return e != nullptr ? e->name : "CUDA_ERROR_<unknown>";
}

std::string describe(CUresult r) {
    const ErrorText *e = find(r);
    if (e == nullptr) {
        return "CUDA_ERROR_<unknown> (CUresult " + std::to_string(static_cast<int>(r)) + ")";
    }
    return std::string(e->name) + " (" + e->text + ")";
}

} // namespace gdrpipe::cuda
