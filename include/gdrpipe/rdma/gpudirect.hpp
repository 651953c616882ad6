// Which GPUDirect RDMA registration path this host offers (probed once).
//
// Order: dma-buf (the caller says whether CUDA reports
// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; CUDA stays out of this module) and
// the verbs library has ibv_reg_dmabuf_mr -> nvidia-peermem (or the older
// nv_peer_mem) kernel module loaded -> none (large transfers are staged,
// small ones too).
#pragma once
#include <functional>
#include <string>

namespace gdrpipe::rdma {

enum class GpuDirect : int { none, peermem, dmabuf };
const char *to_string(GpuDirect g) noexcept;

struct GpuDirectProbe {
    // Returns true if the GPU(s) support dma-buf export. Empty => false.
    std::function<bool()> dmabuf_supported;
    // Root under which "module/nvidia_peermem" is looked up ("/sys").
    std::string sysfs_root = "/sys";
    // Whether the verbs layer can register dma-bufs (the ibv backend: true
    // when built against rdma-core with ibv_reg_dmabuf_mr).
    bool verbs_has_dmabuf = true;
    // false: nvidia-peermem is not considered (the fake fabric: its own flag).
    bool look_for_peermem = true;
    // look_for_peermem false: whether to report peermem anyway.
    bool peermem_present = false;
};

// Probes and logs the result (GP_INFO). Does not cache: callers probe once.
GpuDirect probe_gpudirect(const GpuDirectProbe &probe);

} // namespace gdrpipe::rdma
