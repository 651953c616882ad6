// GPUDirect RDMA capability probe: dma-buf, then nvidia-peermem, else none.
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/gpudirect.hpp>

#include <sys/stat.h>

namespace gdrpipe::rdma {

namespace {
bool dir_exists(const std::string &path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
} // namespace

GpuDirect probe_gpudirect(const GpuDirectProbe &probe) {
    const bool gpu_dmabuf = probe.dmabuf_supported && probe.dmabuf_supported();
    if (gpu_dmabuf && probe.verbs_has_dmabuf) {
        GP_INFO("rdma: GPUDirect RDMA through dma-buf (ibv_reg_dmabuf_mr)");
        return GpuDirect::dmabuf;
    }
    if (!probe.look_for_peermem && probe.peermem_present) {
        GP_INFO("rdma: GPUDirect RDMA through peermem (ibv_reg_mr on device memory)");
        return GpuDirect::peermem;
    }
    for (const char *mod : {"nvidia_peermem", "nv_peer_mem"}) {
        if (probe.look_for_peermem && dir_exists(probe.sysfs_root + "/module/" + mod)) {
            GP_INFO("rdma: GPUDirect RDMA through %s (ibv_reg_mr on device memory)%s", mod,
                    gpu_dmabuf ? "; dma-buf unavailable in the verbs library" : "");
            return GpuDirect::peermem;
        }
    }
    GP_INFO("rdma: no GPUDirect RDMA (%s, no nvidia-peermem): device memory is staged "
            "through host bounce buffers",
            gpu_dmabuf ? "verbs library without dma-buf" : "GPU reports no dma-buf support");
    return GpuDirect::none;
}

} // namespace gdrpipe::rdma
