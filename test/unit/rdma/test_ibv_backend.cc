// The real libibverbs backend on a machine without RDMA devices, and the
// GPUDirect probe against a fake sysfs tree.
#include <gdrpipe/rdma/gpudirect.hpp>
#include <gdrpipe/rdma/verbs.hpp>

#include "gp_catch.hpp"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace gdrpipe::rdma;
namespace fs = std::filesystem;

namespace {
bool host_has_rdma_devices() {
    std::error_code ec;
    const fs::path p = "/sys/class/infiniband";
    return fs::exists(p, ec) && !fs::is_empty(p, ec);
}
} // namespace

TEST_CASE("ibv backend: no RDMA device -> zero ports, no error", "[rdma][ibv]") {
    auto be = make_ibv_backend();
    REQUIRE(be != nullptr);
    if (host_has_rdma_devices()) {
        WARN("this host has RDMA devices; the empty-list case is not exercised");
        return;
    }
    const auto ports = be->ports();
    CHECK(ports.empty());
    PortInfo p;
    p.name = "mlx5_0:1";
    p.device = "mlx5_0";
    auto ctx = be->open(p);
    REQUIRE_FALSE(ctx);
    CHECK(ctx.error().code == -ENODEV);
}

TEST_CASE("GPUDirect probe: dma-buf, then peermem, else none", "[rdma][gpudirect]") {
    char tmpl[] = "/tmp/gdrpipe-sysfs-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    const fs::path root = tmpl;
    GpuDirectProbe pr;
    pr.sysfs_root = root.string();
    CHECK(probe_gpudirect(pr) == GpuDirect::none);
    pr.dmabuf_supported = [] { return false; };
    CHECK(probe_gpudirect(pr) == GpuDirect::none);
    fs::create_directories(root / "module" / "nv_peer_mem");
    CHECK(probe_gpudirect(pr) == GpuDirect::peermem);
    fs::remove(root / "module" / "nv_peer_mem");
    fs::create_directories(root / "module" / "nvidia_peermem");
    CHECK(probe_gpudirect(pr) == GpuDirect::peermem);
    pr.dmabuf_supported = [] { return true; };
    CHECK(probe_gpudirect(pr) == GpuDirect::dmabuf);
    pr.verbs_has_dmabuf = false; // verbs without ibv_reg_dmabuf_mr
    CHECK(probe_gpudirect(pr) == GpuDirect::peermem);
    fs::remove_all(root);
    CHECK(probe_gpudirect(pr) == GpuDirect::none);
}
