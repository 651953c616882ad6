// Per-(GPU, port) crossover of the RDMA wire (include/gdrpipe/rdma/port_crossover.hpp).
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/port_crossover.hpp>

#include <map>
#include <mutex>

#ifndef GP_VERSION
#define GP_VERSION "unknown"
#endif

namespace gdrpipe::rdma {
namespace {

std::mutex g_mu;
using ChoiceMap = std::map<std::pair<int, std::string>, std::unique_ptr<pipeline::PairChoice>>;
ChoiceMap &choices() {
    static auto *m = new ChoiceMap(); // outlives every interface
    return *m;
}

// An RdmaProber that owns its two device buffers.
class OwningProber final : public model::Prober {
  public:
    OwningProber(const PortCalibration &pc, void *src, void *dst, std::size_t cap)
        : mem_(pc.mem), reg_(*pc.reg), src_(src), dst_(dst), cap_(cap) {
        RdmaProberConfig c;
        c.src = src;
        c.dst = dst;
        c.capacity = cap;
        c.kind = pc.mem.kind;
        c.transfer = pc.transfer;
        inner_ = std::make_unique<RdmaProber>(*pc.ctx, *pc.pd, *pc.reg, std::move(c));
    }
    ~OwningProber() override {
        inner_.reset();
        // the registrar caches MRs lazily: drop them before the memory goes
        reg_.invalidate(src_, cap_);
        reg_.invalidate(dst_, cap_);
        mem_.release(src_);
        mem_.release(dst_);
    }
    std::optional<double> time_once(model::Path p, std::size_t bytes,
                                    const model::PipelineParams &pp) override {
        return inner_->time_once(p, bytes, pp);
    }

  private:
    ProbeMemory mem_;
    Registrar &reg_;
    void *src_, *dst_;
    std::size_t cap_;
    std::unique_ptr<RdmaProber> inner_;
};

} // namespace

model::CalibKey port_key(const std::string &gpu_uuid, const std::string &gpu_pci_bus_id,
                         const PortInfo &port, const std::string &driver_version) {
    model::CalibKey key;
    key.local_gpu_uuid = gpu_uuid;
    key.local_pci_bus_id = gpu_pci_bus_id;
    key.remote_gpu_uuid = "port " + port.name;
    key.remote_pci_bus_id = port.device;
    key.peer_relation = "loopback";
    key.wire_kind = "rdma";
    key.driver_version = driver_version;
    key.gdrpipe_version = GP_VERSION;
    return key;
}

const pipeline::PairChoice &port_choice(const PortCalibration &pc, const pipeline::CrossoverConfig &cfg) {
    std::lock_guard<std::mutex> lock(g_mu);
    auto &m = choices();
    const auto id = std::make_pair(pc.gpu, pc.port.name);
    auto it = m.find(id);
    if (it != m.end()) return *it->second;
    auto c = std::make_unique<pipeline::PairChoice>();
    c->src_dev = pc.gpu; // the local GPU; the port's side is the wire
    c->label = pc.gpu_label + " via " + pc.port.name + " (rdma)";

    pipeline::ObtainRequest r;
    r.key = pc.key;
    r.lock_name = model::pair_lock_name(pc.key.local_gpu_uuid, pc.key.remote_gpu_uuid);
    r.fallback_thresh = pc.fallback_thresh;
    r.fallback_what = pc.fallback_thresh == model::kNever ? "direct wherever it works"
                                                          : std::to_string(pc.fallback_thresh) + " bytes";
    r.options.min_bytes = 4096;
    r.options.max_bytes = cfg.max_bytes;
    r.options.budget_s = cfg.budget_s;
    r.options.clock = context_clock(*pc.ctx); // the fabric's own where it models time
    // the staged shape is the endpoints' (slot size x slots), fixed per
    // interface: measure that one, no tuning
    r.options.tune_pipeline = false;
    r.options.pipeline = model::PipelineParams{pc.transfer.slot_size, static_cast<int>(pc.transfer.slots)};
    const PortCalibration copy = pc;
    const std::size_t cap = cfg.max_bytes;
    r.make = [copy, cap](std::string *err) -> std::unique_ptr<model::Prober> {
        void *src = copy.mem.alloc(cap, err);
        if (src == nullptr) return nullptr;
        void *dst = copy.mem.alloc(cap, err);
        if (dst == nullptr) {
            copy.mem.release(src);
            return nullptr;
        }
        return std::make_unique<OwningProber>(copy, src, dst, cap);
    };
    pipeline::obtain_choice(*c, r, cfg);
    // the staged shape is the interface's (measured, not tuned): nothing to
    // report about it in the log line
    c->pipeline = model::PipelineParams{};
    c->have_pipeline = false;
    GP_INFO("crossover for %s %s", c->label.c_str(), c->describe().c_str());
    return *m.emplace(id, std::move(c)).first->second;
}

void reset_port_choices() {
    std::lock_guard<std::mutex> lock(g_mu);
    choices().clear();
}

} // namespace gdrpipe::rdma
