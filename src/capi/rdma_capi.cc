// extern "C" face of the RDMA wire (include/gdrpipe/capi_rdma.h), for the UCX
// glue's RDMA transport. One gp_rdma_dev per port (verbs context, PD,
// registrar, exposures shared by its endpoints), one TransferEngine per
// endpoint. The staged path's chunk copies are the core's (the engine's
// pipeline::ChunkPipe with pipeline::StreamCopier), polled by the engine.
#include "gdrpipe/capi.h"
#include "set_err.hpp"
#include "gdrpipe/capi_rdma.h"
#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/cuda/gpudirect.hpp"
#include "gdrpipe/log.hpp"
#include "gdrpipe/model/shared_obtain.hpp"
#include "gdrpipe/rdma/fake_backend.hpp"
#include "gdrpipe/rdma/gpudirect.hpp"
#include "gdrpipe/rdma/port_crossover.hpp"
#include "gdrpipe/rdma/transfer.hpp"
#include "gdrpipe/secret_token.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

using namespace gdrpipe::rdma;

namespace {

using gdrpipe::capi::set_err;

// Process-wide backend. Both live until exit on purpose: endpoints of
// interfaces UCX never closed may still point into them during exit.
std::mutex g_mu;
Backend *g_backend = nullptr;
FakeFabric *g_fake = nullptr;
gp_rdma_fake_config_t g_fake_cfg{};
std::atomic<std::uint64_t> g_starts{0};
std::atomic<std::uint64_t> g_cuda_flushes{0};

// The GPUDirect RDMA mode, probed once per process (logged by the probe).
GpuDirect gpudirect_mode() {
    static const GpuDirect mode = [] {
        GpuDirectProbe p;
        p.dmabuf_supported = [] {
            if (gp_cuda_available() == 0) return false;
            for (int d = 0; d < gdrpipe::cuda::devices().count(); ++d) {
                if (gdrpipe::cuda::dmabuf_supported(d)) return true;
            }
            return false;
        };
        std::lock_guard<std::mutex> g(g_mu);
        if (g_fake != nullptr) { // the fake device's own capabilities
            p.verbs_has_dmabuf = g_fake_cfg.dmabuf != 0;
            p.look_for_peermem = false;
            p.peermem_present = g_fake_cfg.peermem != 0;
        }
        return probe_gpudirect(p);
    }();
    return mode;
}

Backend &backend() {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_backend == nullptr) {
        g_backend = make_ibv_backend().release();
    }
    return *g_backend;
}

struct StatsAcc {
    std::mutex mu;
    std::set<gp_rdma_ep_t *> live;
    TransferStats gone{};
};
StatsAcc &stats_acc() {
    static auto *s = new StatsAcc; // outlives every endpoint
    return *s;
}
void add(TransferStats &a, const TransferStats &b) {
    a.direct += b.direct;
    a.staged += b.staged;
    a.fallbacks += b.fallbacks;
    a.errors += b.errors;
}

} // namespace

struct gp_rdma_dev {
    std::atomic<int> refs{1};
    PortInfo port;
    std::uint64_t fabric_id = 0;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<Registrar> reg;
    struct Exposure {
        std::uintptr_t addr = 0;
        std::size_t len = 0;
        std::uint64_t token = 0; // in the rkey; staged requests must name it
        Registration reg;
    };
    std::mutex mu; // exposures, fake_dev
    std::unordered_map<std::uint32_t, Exposure> exposures;
    std::uint32_t next_key = 1;
    std::set<std::uintptr_t> fake_dev; // allocations declared to the fake device

    bool exposed(std::uint32_t key, std::uint64_t token, std::uint64_t addr, std::uint64_t len) {
        std::lock_guard<std::mutex> g(mu);
        auto it = exposures.find(key);
        if (it == exposures.end() || it->second.token != token) return false;
        const Exposure &e = it->second;
        return addr >= e.addr && len <= e.len && addr - e.addr <= e.len - len;
    }

    // Host or CUDA memory? Device memory is declared to the fake device so
    // that it behaves like GPU memory there (reg_mr refuses it).
    LocalBuffer classify(void *ptr, std::size_t len, int *device = nullptr) {
        if (device != nullptr) *device = -1;
        LocalBuffer b;
        b.ptr = ptr;
        b.len = len;
        gp_mem_info_t info;
        if (gp_cuda_available() && gp_cuda_mem_query(ptr, &info) == 0 &&
            info.kind != GP_MEM_HOST) {
            b.kind = MemKind::device;
            if (device != nullptr) *device = info.device;
            b.tag = info.buffer_id;
            b.bounds = {static_cast<std::uintptr_t>(info.base),
                        static_cast<std::uintptr_t>(info.base + info.length)};
            if (g_fake != nullptr) {
                std::lock_guard<std::mutex> g(mu);
                if (fake_dev.insert(static_cast<std::uintptr_t>(info.base)).second) {
                    g_fake->add_device_memory(reinterpret_cast<void *>(info.base), info.length);
                }
            }
        }
        return b;
    }
};

struct gp_rdma_ep {
    gp_rdma_dev *dev = nullptr;
    std::unique_ptr<TransferEngine> eng;
    gp_rdma_err_cb_t err_cb = nullptr;
    void *arg = nullptr;
    PathChoice path = PathChoice::automatic;
    // THRESH=auto: the measured crossover of the local GPU's (gpu, port)
    bool auto_thresh = false;
    gdrpipe::pipeline::CrossoverConfig xcfg;
    std::size_t fallback_thresh = gdrpipe::model::kNever;
    std::uint32_t slot_size = 0, slots = 0;
    int choice_dev = -2; // the device `choice` is of
    const gdrpipe::pipeline::PairChoice *choice = nullptr;
    bool failed = false;
    std::size_t inflight = 0;
};

namespace {
void dev_unref(gp_rdma_dev *d) {
    if (d != nullptr && d->refs.fetch_sub(1) == 1) {
        d->exposures.clear();
        d->reg.reset();
        d->pd.reset();
        d->ctx.reset();
        delete d;
    }
}
PathChoice to_choice(int path, PathChoice dflt) {
    switch (path) {
    case GP_PATH_DIRECT: return PathChoice::direct;
    case GP_PATH_STAGED: return PathChoice::staged;
    default: return dflt;
    }
}

// THRESH=auto: CALIBRATE/CALIB_* of the rdma interface, the intra-host
// defaults where unset (4 MiB largest probe: larger messages are staged
// anyway once staged wins at 4 MiB).
gdrpipe::pipeline::CrossoverConfig crossover_config(const gp_rdma_ep_config_t *cfg) {
    static const double first_ep = gdrpipe::model::wall_clock_now(); // force: once per process
    gdrpipe::pipeline::CrossoverConfig x;
    x.mode = cfg->calibrate == GP_CALIB_FORCE ? gdrpipe::model::CalibMode::force
             : cfg->calibrate == GP_CALIB_OFF ? gdrpipe::model::CalibMode::off
                                              : gdrpipe::model::CalibMode::automatic;
    if (cfg->calib_dir != nullptr) x.dir = cfg->calib_dir;
    if (cfg->calib_budget_s > 0) x.budget_s = cfg->calib_budget_s;
    if (cfg->calib_wait_s > 0) x.wait_s = cfg->calib_wait_s;
    x.max_bytes = cfg->calib_max_size > 0 ? cfg->calib_max_size : std::size_t{4} << 20;
    x.fresh_after = first_ep;
    return x;
}

// The measured (or cached, or fallback) rule of local GPU `device` on this
// endpoint's port; the first call per (device, port) in the process obtains
// it (calibrating now through the port when nothing is cached).
const gdrpipe::pipeline::PairChoice &port_rule(gp_rdma_ep *ep, int device) {
    gp_rdma_dev *dev = ep->dev;
    PortCalibration pc;
    pc.gpu = device;
    pc.gpu_label = gdrpipe::pipeline::gpu_label(device);
    pc.port = dev->port;
    const gdrpipe::cuda::DeviceProps *props = gdrpipe::cuda::devices().props(device);
    pc.key = port_key(gdrpipe::pipeline::gpu_uuid_string(device), props != nullptr ? props->pci_bus_id : "",
                      dev->port, std::to_string(gdrpipe::cuda::driver().version()));
    pc.ctx = dev->ctx.get();
    pc.pd = dev->pd.get();
    pc.reg = dev->reg.get();
    pc.mem.kind = MemKind::device;
    pc.mem.alloc = [dev, device](std::size_t n, std::string *err) -> void * {
        gdrpipe::cuda::ScopedContext c(gdrpipe::cuda::devices(), device);
        CUdeviceptr p = 0;
        const CUresult r = c.status() == CUDA_SUCCESS ? gdrpipe::cuda::driver().api().cuMemAlloc(&p, n)
                                                      : c.status();
        if (r != CUDA_SUCCESS) {
            *err = "cuMemAlloc of " + std::to_string(n) + " bytes on GPU " + std::to_string(device) +
                   " failed (" + std::to_string(static_cast<int>(r)) + ")";
            return nullptr;
        }
        void *ptr = reinterpret_cast<void *>(p);
        dev->classify(ptr, n); // declared to the fake device like any GPU memory
        return ptr;
    };
    pc.mem.release = [dev, device](void *ptr) {
        if (g_fake != nullptr) {
            std::lock_guard<std::mutex> g(dev->mu);
            if (dev->fake_dev.erase(reinterpret_cast<std::uintptr_t>(ptr)) != 0) g_fake->remove_device_memory(ptr);
        }
        gdrpipe::cuda::ScopedContext c(gdrpipe::cuda::devices(), device);
        gdrpipe::cuda::driver().api().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr));
    };
    // chunk copies: the engines' own (asynchronous, polled by their progress)
    pc.transfer.slot_size = ep->slot_size;
    pc.transfer.slots = ep->slots;
    pc.fallback_thresh = ep->fallback_thresh;
    return port_choice(pc, ep->xcfg);
}

} // namespace

extern "C" {

int gp_rdma_use_fake(const gp_rdma_fake_config_t *cfg) {
    std::lock_guard<std::mutex> g(g_mu);
    if (g_backend != nullptr) {
        return g_fake != nullptr ? 0 : -1;
    }
    g_fake_cfg = *cfg;
    FakeConfig fc;
    fc.dmabuf_supported = cfg->dmabuf != 0;
    fc.peermem = cfg->peermem != 0;
    fc.latency_us = cfg->latency_us;
    fc.bandwidth_gbps = cfg->bandwidth_gbps;
    fc.device_bandwidth_gbps = cfg->device_bandwidth_gbps;
    fc.modeled_clock = cfg->modeled_clock != 0;
    g_fake = new FakeFabric(fc);
    g_backend = g_fake->backend().release();
    GP_INFO("rdma: using the in-process fake fabric (test mode)");
    return 0;
}

int gp_rdma_is_fake(void) {
    std::lock_guard<std::mutex> g(g_mu);
    return g_fake != nullptr;
}

int gp_rdma_list_ports(gp_rdma_port_t *ports, int max) {
    const std::vector<PortInfo> all = backend().ports();
    for (int i = 0; i < max && i < static_cast<int>(all.size()); ++i) {
        std::snprintf(ports[i].name, sizeof(ports[i].name), "%s", all[i].name.c_str());
        std::snprintf(ports[i].device, sizeof(ports[i].device), "%s", all[i].device.c_str());
    }
    return static_cast<int>(all.size());
}

const char *gp_rdma_gpudirect_mode(void) { return to_string(gpudirect_mode()); }

gp_rdma_dev_t *gp_rdma_dev_open(const char *port_name, const gp_rdma_dev_config_t *cfg,
                                char *err, size_t errlen) {
    Backend &be = backend();
    (void)gpudirect_mode(); // probed (and logged) once, before the first device
    for (const PortInfo &p : be.ports()) {
        if (p.name != port_name) continue;
        auto ctx = be.open(p);
        if (!ctx) {
            set_err(err, errlen, ctx.error().message);
            return nullptr;
        }
        auto pd = ctx.value()->alloc_pd();
        if (!pd) {
            set_err(err, errlen, pd.error().message);
            return nullptr;
        }
        auto *d = new gp_rdma_dev;
        d->port = p;
        d->ctx = std::move(ctx.value());
        d->pd = std::move(pd.value());
        if (g_fake != nullptr) {
            d->fabric_id = (std::uint64_t{1} << 63) | static_cast<std::uint64_t>(getpid());
        } else if (p.link_layer == LinkLayer::infiniband) {
            std::memcpy(&d->fabric_id, p.gid.data(), sizeof(d->fabric_id)); // subnet prefix
        }
        RegistrarConfig rc;
        rc.max_regions = cfg->cache_max_regions;
        rc.max_bytes = cfg->cache_max_bytes;
        rc.try_dmabuf = cfg->try_dmabuf != 0;
        rc.try_peermem = cfg->try_peermem != 0;
        // dma-buf export through CUDA (cuMemGetHandleForAddressRange); the
        // fake device imports the simulator's descriptors by mapping them
        DeviceRegHooks hooks;
        hooks.get_dmabuf_fd = [](const void *ptr, std::size_t len, int *fd,
                                 std::uint64_t *offset) {
            const CUresult r = gdrpipe::cuda::dmabuf_fd(ptr, len, fd);
            if (r == CUDA_ERROR_NOT_SUPPORTED) return -EOPNOTSUPP;
            if (r != CUDA_SUCCESS) return -EINVAL;
            *offset = 0;
            return 0;
        };
        hooks.close_dmabuf_fd = [](int fd) { ::close(fd); };
        d->reg = std::make_unique<Registrar>(*d->pd, std::move(hooks), rc);
        return d;
    }
    set_err(err, errlen, std::string("no active RDMA port ") + port_name);
    return nullptr;
}

void gp_rdma_dev_close(gp_rdma_dev_t *dev) { dev_unref(dev); }

uint64_t gp_rdma_dev_fabric_id(const gp_rdma_dev_t *dev) { return dev->fabric_id; }

int gp_rdma_mem_reg(gp_rdma_dev_t *dev, void *addr, size_t len, void *rkey_out, void **reg,
                    char *err, size_t errlen) {
    if (addr == nullptr || len == 0 || rkey_out == nullptr || reg == nullptr) {
        set_err(err, errlen, "invalid argument");
        return -EINVAL;
    }
    int device = -1;
    const LocalBuffer b = dev->classify(addr, len, &device);
    // peers' direct puts into this device memory are flushed here before
    // they complete (where the GPU needs it)
    const std::uint32_t flag =
        (device >= 0 && gdrpipe::cuda::rdma_flush_needed(device)) ? kKeyFlushOnWrite : 0;
    gp_rdma_dev::Exposure x;
    x.addr = reinterpret_cast<std::uintptr_t>(addr);
    x.len = len;
    auto r = dev->reg->get(addr, len, b.kind, b.tag, b.bounds);
    if (r) {
        x.reg = std::move(r.value());
    } else {
        GP_DEBUG("rdma: %p+%zu not registered (%s): staged only", addr, len,
                 r.error().message.c_str());
    }
    x.token = gdrpipe::new_secret_token();
    RemoteKey k;
    k.addr = x.addr;
    k.len = x.len;
    k.rkey = x.reg.rkey();
    k.token = x.token;
    {
        std::lock_guard<std::mutex> g(dev->mu);
        do {
            k.key_id = ((dev->next_key++) & ~kKeyFlushOnWrite) | flag;
        } while ((k.key_id & ~kKeyFlushOnWrite) == 0 || dev->exposures.count(k.key_id) != 0);
        dev->exposures.emplace(k.key_id, std::move(x));
    }
    const std::vector<std::uint8_t> blob = pack_remote_key(k);
    std::memcpy(rkey_out, blob.data(), GP_RDMA_RKEY_SIZE);
    *reg = reinterpret_cast<void *>(static_cast<std::uintptr_t>(k.key_id));
    return 0;
}

void gp_rdma_mem_dereg(gp_rdma_dev_t *dev, void *reg) {
    const auto key = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(reg));
    std::lock_guard<std::mutex> g(dev->mu);
    dev->exposures.erase(key);
}

const char *gp_rdma_check_rkey(const void *rkey, size_t len) {
    static_assert(GP_RDMA_RKEY_SIZE == kRemoteKeySize);
    if (len != GP_RDMA_RKEY_SIZE) return "wrong length";
    auto k = unpack_remote_key({static_cast<const std::uint8_t *>(rkey), len});
    return k ? nullptr : "malformed RDMA remote key";
}

gp_rdma_ep_t *gp_rdma_ep_create(gp_rdma_dev_t *dev, const gp_rdma_ep_config_t *cfg,
                                gp_rdma_err_cb_t err_cb, void *arg, char *err, size_t errlen) {
    auto *ep = new gp_rdma_ep;
    ep->dev = dev;
    ep->err_cb = err_cb;
    ep->arg = arg;
    ep->path = to_choice(cfg->path, PathChoice::automatic);
    TransferConfig tc;
    tc.direct_threshold = cfg->thresh;
    if (cfg->thresh == GP_THRESH_AUTO) {
        ep->auto_thresh = true;
        tc.direct_threshold = gdrpipe::model::kNever; // host memory: direct
        ep->choice_dev = -1;
        ep->xcfg = crossover_config(cfg);
        ep->fallback_thresh = cfg->fallback_thresh;
        ep->slot_size = cfg->slot_size;
        ep->slots = cfg->slots;
    }
    tc.slot_size = cfg->slot_size;
    tc.slots = cfg->slots;
    tc.stall_timeout_s = cfg->stall_timeout_s;
    tc.exposed = [dev](std::uint32_t key, std::uint64_t token, std::uint64_t a, std::uint64_t n) {
        return dev->exposed(key, token, a, n);
    };
    tc.flush_remote_writes = [](std::uint64_t addr, std::uint64_t) {
        gp_mem_info_t info;
        if (gp_cuda_mem_query(reinterpret_cast<const void *>(addr), &info) != 0 || info.device < 0) {
            return -EINVAL;
        }
        const CUresult r = gdrpipe::cuda::flush_rdma_writes(info.device);
        if (r != CUDA_SUCCESS) {
            GP_WARN("rdma: cuFlushGPUDirectRDMAWrites failed (%d)", static_cast<int>(r));
            return -EIO;
        }
        g_cuda_flushes.fetch_add(1);
        return 0;
    };
    auto on_error = [ep](int code, const std::string &why) {
        ep->failed = true;
        if (ep->err_cb != nullptr) ep->err_cb(ep->arg, code, why.c_str());
    };
    auto e = TransferEngine::create(*dev->ctx, *dev->pd, *dev->reg, tc, on_error);
    if (!e) {
        set_err(err, errlen, e.error().message);
        delete ep;
        return nullptr;
    }
    ep->eng = std::move(e.value());
    dev->refs.fetch_add(1);
    std::lock_guard<std::mutex> g(stats_acc().mu);
    stats_acc().live.insert(ep);
    return ep;
}

void gp_rdma_ep_destroy(gp_rdma_ep_t *ep) {
    {
        std::lock_guard<std::mutex> g(stats_acc().mu);
        stats_acc().live.erase(ep);
        add(stats_acc().gone, ep->eng->stats());
    }
    ep->eng.reset(); // waits for its chunk copies
    dev_unref(ep->dev);
    delete ep;
}

size_t gp_rdma_ep_address_length(void) { return kEpAddressSize; }

void gp_rdma_ep_address(const gp_rdma_ep_t *ep, void *addr) {
    const std::vector<std::uint8_t> a = ep->eng->address();
    std::memcpy(addr, a.data(), a.size());
}

int gp_rdma_ep_connect(gp_rdma_ep_t *ep, const void *addr, size_t len) {
    return ep->eng->connect({static_cast<const std::uint8_t *>(addr), len});
}

int gp_rdma_ep_start(gp_rdma_ep_t *ep, int is_get, void *local, size_t len, uint64_t remote_addr,
                     const void *rkey, int path, gp_rdma_done_cb_t cb, void *arg) {
    if (ep->failed || ep->eng->state() == ConnState::error) return -ECONNRESET;
    auto k = unpack_remote_key({static_cast<const std::uint8_t *>(rkey), GP_RDMA_RKEY_SIZE});
    if (!k) return -EINVAL;
    int device = -1;
    const LocalBuffer b = ep->dev->classify(local, len, &device);
    // An RDMA READ lands in local device memory: the NIC's writes must be
    // flushed before CUDA work may consume them (where the GPU says so).
    const bool flush = is_get && device >= 0 && gdrpipe::cuda::rdma_flush_needed(device);
    // only the direct path has the NIC write into the buffer (staged: an H2D copy)
    auto was_direct = std::make_shared<bool>(false);
    auto done = [ep, cb, arg, flush, device, was_direct](int st) {
        --ep->inflight;
        if (flush && *was_direct && st == 0) {
            const CUresult r = gdrpipe::cuda::flush_rdma_writes(device);
            if (r != CUDA_SUCCESS) {
                GP_WARN("rdma: cuFlushGPUDirectRDMAWrites failed (%d)", static_cast<int>(r));
                st = -EIO;
            } else {
                g_cuda_flushes.fetch_add(1);
            }
        }
        cb(arg, st);
    };
    PathChoice pc = to_choice(path, ep->path);
    if (ep->auto_thresh && pc == PathChoice::automatic) {
        if (device != ep->choice_dev) {
            ep->choice = device < 0 ? nullptr : &port_rule(ep, device);
            ep->choice_dev = device;
        }
        // host memory: direct wherever it works; a device: the port's rule
        // (either orientation). The engine's own threshold stays kNever (set
        // at creation), so "automatic" means "direct if possible".
        if (ep->choice != nullptr && ep->choice->path_for(len) == gdrpipe::model::Path::staged)
            pc = PathChoice::staged;
    }
    const std::uint64_t direct_before = ep->eng->stats().direct;
    const int rc = is_get ? ep->eng->get(b, remote_addr, k.value(), done, pc)
                          : ep->eng->put(b, remote_addr, k.value(), done, pc);
    if (rc != 0) return rc;
    *was_direct = ep->eng->stats().direct != direct_before;
    ++ep->inflight;
    if (g_fake != nullptr && g_fake_cfg.fail_after != 0 &&
        g_starts.fetch_add(1) + 1 == g_fake_cfg.fail_after) {
        GP_WARN("rdma: fault injection: QP %u forced to the error state", ep->eng->qp_num());
        g_fake->force_qp_error(ep->eng->qp_num());
    }
    return 0;
}

unsigned gp_rdma_ep_progress(gp_rdma_ep_t *ep) {
    const int r = ep->eng->progress();
    return r > 0 ? static_cast<unsigned>(r) : 0;
}

void gp_rdma_dev_idle(gp_rdma_dev_t *dev) { dev->ctx->idle(); }

int gp_rdma_ep_idle(const gp_rdma_ep_t *ep) { return ep->inflight == 0 && ep->eng->idle(); }

int gp_rdma_ep_failed(const gp_rdma_ep_t *ep) {
    return ep->failed || ep->eng->state() == ConnState::error;
}

void gp_rdma_get_stats(gp_rdma_stats_t *out) {
    std::memset(out, 0, sizeof(*out));
    TransferStats t{};
    {
        std::lock_guard<std::mutex> g(stats_acc().mu);
        t = stats_acc().gone;
        for (gp_rdma_ep_t *ep : stats_acc().live) add(t, ep->eng->stats());
        out->live_eps = stats_acc().live.size();
    }
    out->direct = t.direct;
    out->staged = t.staged;
    out->fallbacks = t.fallbacks;
    out->errors = t.errors;
    out->cuda_flushes = g_cuda_flushes.load();
    if (g_fake != nullptr) {
        const FakeStats f = g_fake->stats();
        out->fake_ops = f.ops_executed;
        out->fake_bytes = f.bytes_moved;
        out->fake_dmabuf_regs = f.dmabuf_regs;
        out->fake_live_mrs = f.live_mrs;
    }
}

} // extern "C"
