// model::Prober over the RDMA transfer engine (include/gdrpipe/rdma/prober.hpp).
#include <gdrpipe/log.hpp>
#include <gdrpipe/rdma/prober.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

namespace gdrpipe::rdma {

RdmaProber::RdmaProber(Context &ctx, ProtectionDomain &pd, Registrar &reg, RdmaProberConfig cfg)
    : ctx_(ctx), pd_(pd), reg_(reg), cfg_(std::move(cfg)) {}

RdmaProber::~RdmaProber() {
    b_.reset();
    a_.reset();
}

model::Clock RdmaProber::clock() const {
    return context_clock(ctx_);
}

model::Clock context_clock(const Context &ctx) {
    return [&ctx, steady = model::steady_clock_seconds()] {
        const std::optional<double> m = ctx.modeled_now();
        return m ? *m : steady();
    };
}

bool RdmaProber::ensure_pair(const model::PipelineParams &pp) {
    if (shape_ && *shape_ == pp && a_ && b_ && a_->state() == ConnState::connected &&
        b_->state() == ConnState::connected) {
        return true;
    }
    b_.reset();
    a_.reset();
    shape_.reset();
    TransferConfig tc = cfg_.transfer;
    // the slot is a multiple of 4 KiB; the engine allows up to kMaxStageSlots
    const std::size_t chunk = std::clamp<std::size_t>(pp.chunk_bytes, 4096, kMaxStageSlotSize);
    tc.slot_size = static_cast<std::uint32_t>((chunk + 4095) & ~std::size_t{4095});
    tc.slots = static_cast<std::uint32_t>(std::clamp(pp.depth, 1, static_cast<int>(kMaxStageSlots)));
    tc.direct_threshold = 0; // paths are always forced here
    auto a = TransferEngine::create(ctx_, pd_, reg_, tc);
    auto b = TransferEngine::create(ctx_, pd_, reg_, tc);
    if (!a || !b) {
        GP_WARN("rdma prober: cannot create the engine pair: %s",
                (!a ? a.error() : b.error()).message.c_str());
        return false;
    }
    a_ = std::move(a.value());
    b_ = std::move(b.value());
    if (a_->connect(b_->address()) != 0 || b_->connect(a_->address()) != 0) {
        GP_WARN("rdma prober: cannot connect the engine pair");
        return false;
    }
    LocalBuffer dst{cfg_.dst, cfg_.capacity, cfg_.kind};
    auto k = b_->expose(dst);
    if (!k) {
        GP_WARN("rdma prober: cannot expose the destination: %s", k.error().message.c_str());
        return false;
    }
    key_ = k.value();
    shape_ = pp;
    return true;
}

std::optional<double> RdmaProber::time_once(model::Path p, std::size_t bytes,
                                            const model::PipelineParams &pp) {
    if (bytes == 0 || bytes > cfg_.capacity || !ensure_pair(pp)) {
        return std::nullopt;
    }
    const bool direct = p == model::Path::direct;
    if (direct && !key_.direct()) {
        return std::nullopt; // the destination has no MR: no direct path
    }
    const TransferStats before = a_->stats();
    int status = 1;
    LocalBuffer src{cfg_.src, bytes, cfg_.kind};
    const model::Clock now = clock();
    const double t0 = now();
    const auto real_t0 = std::chrono::steady_clock::now();
    const int rc = a_->put(src, reinterpret_cast<std::uintptr_t>(cfg_.dst), key_,
                           [&status](int st) { status = st; },
                           direct ? PathChoice::direct : PathChoice::staged);
    if (rc != 0) {
        return std::nullopt;
    }
    const auto limit = real_t0 + std::chrono::duration<double>(cfg_.timeout_s);
    while (status == 1) {
        const int n = a_->progress() + b_->progress();
        if (std::chrono::steady_clock::now() > limit) {
            GP_WARN("rdma prober: %zu-byte %s put timed out", bytes, direct ? "direct" : "staged");
            b_.reset(); // drops the transfer; the pair is rebuilt next time
            a_.reset();
            shape_.reset();
            return std::nullopt;
        }
        if (n == 0) {
            ctx_.idle(); // a modeled fabric moves to its next event
            std::this_thread::yield();
        }
    }
    const double s = now() - t0;
    const TransferStats after = a_->stats();
    if (direct != (after.direct > before.direct)) {
        ++mismatches_;
        return std::nullopt; // it did not take the path to be measured
    }
    if (status != 0) {
        return std::nullopt;
    }
    return s;
}

} // namespace gdrpipe::rdma
