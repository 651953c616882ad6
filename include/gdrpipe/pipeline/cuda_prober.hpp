// model::Prober over the CUDA driver: times the two data paths between two
// devices of this process (or a device and host memory).
//
// direct: one copy device A -> device B (cuMemcpyPeerAsync; requires peer
//         access, else unavailable), or device A -> pageable host memory
//         (to_host), or pageable host memory -> device B (from_host).
// staged: chunks D2H from A into a pinned host ring, then H2D to B (or a host
//         memcpy into the destination), `depth` chunks in flight; D2H runs on
//         a stream of A, H2D on a stream of B and waits for its chunk's D2H
//         event; a ring slot is reused only once its second stage completed.
//         from_host: a host memcpy of the chunk into the ring, then its H2D.
// Both are timed with the host steady clock from first issue to completion.
// Shared by gdrpipe-calibrate and the plugin's per-pair calibration
// (crossover.hpp); its streams are slot 4 of each device, which no data path uses.
#pragma once
#include "gdrpipe/model/calibrate.hpp"

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gdrpipe::pipeline {

struct ProberConfig {
    int dev_a = 0;
    int dev_b = 1;      // ignored when to_host
    bool to_host = false;   // A -> pageable host memory
    bool from_host = false; // pageable host memory -> B (dev_a ignored)
    std::size_t capacity = 0; // bytes allocated up front (largest size probed)
};

class CudaProber final : public model::Prober {
public:
    // nullptr with *err set when CUDA is off, an ordinal is invalid or an
    // allocation fails.
    static std::unique_ptr<CudaProber> create(const ProberConfig &cfg, std::string *err);
    ~CudaProber() override;
    CudaProber(const CudaProber &) = delete;
    CudaProber &operator=(const CudaProber &) = delete;

    std::optional<double> time_once(model::Path p, std::size_t bytes,
                                    const model::PipelineParams &pp) override;

    bool peer_access() const noexcept { return peer_; }
    // The first error a probe hit ("" if none).
    const std::string &first_error() const noexcept { return first_error_; }

private:
    explicit CudaProber(const ProberConfig &cfg) : cfg_(cfg) {}
    bool setup(std::string *err);
    bool ensure_capacity(std::size_t bytes);
    bool ensure_ring(std::size_t chunk, int depth);
    bool ensure_events(int depth);
    std::optional<double> run_direct(std::size_t bytes);
    std::optional<double> run_staged(std::size_t bytes, const model::PipelineParams &pp);
    bool check(CUresult r, const char *what);
    int ring_dev() const noexcept { return cfg_.from_host ? cfg_.dev_b : cfg_.dev_a; }
    void drain() noexcept;
    void release_all() noexcept;

    ProberConfig cfg_;
    bool peer_ = false;
    CUstream stream_a_ = nullptr;
    CUstream stream_b_ = nullptr;
    CUdeviceptr src_ = 0;      // on A
    CUdeviceptr dst_dev_ = 0;  // on B (device mode)
    void *dst_host_ = nullptr; // pageable (to_host)
    void *src_host_ = nullptr; // pageable (from_host)
    std::size_t cap_ = 0;
    void *ring_ = nullptr;     // pinned, portable
    std::size_t ring_cap_ = 0;
    std::vector<CUevent> first_done_;  // D2H of a slot done (events of A)
    std::vector<CUevent> second_done_; // H2D of a slot done (events of B)
    bool warm_direct_ = false;
    bool warm_staged_ = false;
    std::string first_error_;
};

} // namespace gdrpipe::pipeline
