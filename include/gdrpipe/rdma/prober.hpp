// Calibration over the RDMA wire: a model::Prober that times one put of the
// direct path (RDMA WRITE from the registered source; GPUDirect RDMA for
// device memory) or of the host-staged pipeline, between two transfer
// engines of this process connected through one port (on hardware: loopback
// through the HCA, which crosses the same PCIe paths as a remote transfer;
// in tests: the fake fabric, whose latency/bandwidth set the crossover).
// The staged pipeline's shape (chunk = receive slot, depth = slots) is fixed
// per engine pair, so a new PipelineParams reconnects the pair.
#pragma once
#include <gdrpipe/model/calibrate.hpp>
#include <gdrpipe/rdma/transfer.hpp>

#include <memory>
#include <optional>

namespace gdrpipe::rdma {

struct RdmaProberConfig {
    void *src = nullptr;       // capacity bytes each, caller-owned
    void *dst = nullptr;
    std::size_t capacity = 0;
    MemKind kind = MemKind::host; // of both buffers
    // conn/caps and the chunk copiers (null: the core's CUDA copies);
    // slot_size/slots come from PipelineParams
    TransferConfig transfer;
    double timeout_s = 10.0;   // one transfer
};

// The context's modeled clock (Context::modeled_now) where it has one, else
// the steady clock, in seconds. `ctx` must outlive the returned clock.
model::Clock context_clock(const Context &ctx);

class RdmaProber final : public model::Prober {
  public:
    RdmaProber(Context &ctx, ProtectionDomain &pd, Registrar &reg, RdmaProberConfig cfg);
    ~RdmaProber() override;
    std::optional<double> time_once(model::Path p, std::size_t bytes,
                                    const model::PipelineParams &pp) override;
    // What the probes are timed with: the context's modeled clock where it
    // has one, else the steady clock. Calibrations keep their budget on it.
    model::Clock clock() const;
    // Transfers that took another path than asked (e.g. direct impossible).
    std::uint64_t mismatches() const noexcept { return mismatches_; }

  private:
    bool ensure_pair(const model::PipelineParams &pp);
    Context &ctx_;
    ProtectionDomain &pd_;
    Registrar &reg_;
    RdmaProberConfig cfg_;
    std::optional<model::PipelineParams> shape_;
    std::unique_ptr<TransferEngine> a_, b_;
    RemoteKey key_{};
    std::uint64_t mismatches_ = 0;
};

} // namespace gdrpipe::rdma
