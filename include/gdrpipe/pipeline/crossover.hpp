// The direct/staged rule per (source, destination) pair of a transfer's data
// (a device ordinal, or host memory), for the engine's PATH=auto with thresh
// == GP_THRESH_AUTO (docs/crossover.md, "In the plugin").
//
// The first transfer of a pair obtains the crossover: from the on-disk cache
// when valid, else by calibrating now between the two devices with the
// CudaProber (the one gdrpipe-calibrate uses), serialized across processes by
// a lock file beside the cache. The result is process-wide, kept for the
// process's lifetime and logged once at INFO level. When the direct path is
// impossible (remote device not visible, no peer access) nothing is measured:
// staged. A failed calibration stores nothing and falls back to kFallback.
// Pairs with host memory on one side (pageable user memory against a peer's
// device buffer) are calibrated the same way with the prober's host modes.
#pragma once
#include "gdrpipe/model/cost_model.hpp"
#include "gdrpipe/model/shared_obtain.hpp"
#include "gdrpipe/model/types.hpp"
#include "gdrpipe/pipeline/online_check.hpp"

#include <cstddef>
#include <string>

namespace gdrpipe::pipeline {

struct CrossoverConfig {
    model::CalibMode mode = model::CalibMode::automatic;
    std::string dir;               // "": CalibCache::default_dir()
    double budget_s = 0.5;
    double wait_s = 10.0;
    std::size_t max_bytes = std::size_t{64} << 20;
    // force: cache entries written at or after this wall-clock time count as
    // this run's (the engine sets it to its process's first engine creation)
    double fresh_after = 0.0;
};

enum class PairOrigin : int {
    measured = 0,  // calibrated now by this process
    cache,         // read from the cache
    fallback,      // calibration failed / timed out / off without an entry
    same_device,   // both buffers on one GPU: direct
    no_peer        // remote device invisible or no peer access: staged
};
const char *pair_origin_name(PairOrigin o) noexcept;

struct PairChoice {
    int src_dev = -1; // where the data comes from (-1: host memory)
    int dst_dev = -1; // where it goes (-1: host memory)
    // the calibrated rule: `below` under thresh, the other path from it on
    std::size_t thresh = model::kNever;
    model::Path below = model::Path::direct;
    std::size_t model_thresh = model::kNever; // the calibration's own crossing
    bool have_fits = false; // measured or cached: both paths' fitted curves
    model::PathFit direct_fit, staged_fit;
    model::CalibKey key;    // of the cache entry (measured or cached)
    // the size classes of the cache entry already checked through a peer
    // (online_check.hpp); when there are any, `rule` comes from the
    // corrected curves, else it is thresh/below
    std::vector<model::OnlineClass> online;
    std::vector<model::MeasuredPoint> table; // the calibration's measured sizes
    SizeRule rule;
    model::Path path_for(std::size_t bytes) const noexcept { return rule.path_for(bytes); }
    bool have_pipeline = false;         // `pipeline` was calibrated
    model::PipelineParams pipeline;
    PairOrigin origin = PairOrigin::fallback;
    std::string cache_path; // origin cache / measured (stored there when stored)
    double took_ms = 0.0;   // measuring (measured) or waiting for the lock
    std::string label;      // "GPU 1a2b3c4d->5e6f7a8b"
    std::string describe() const; // "= 41380 B (measured now in 312 ms)"
};

// "never (direct at every size)", "N bytes (staged below, direct from)", ...
std::string describe_rule(std::size_t thresh, model::Path below);

// The rule the plugin takes from a calibration record: the corrected rule
// (corrected_rule) when the record holds classes checked through a peer, else
// the calibrated threshold, a "direct below" one moved up to where the staged
// fit is 15 % faster (kStagedGain).
SizeRule rule_of_record(const model::CalibRecord &rec, std::size_t max_bytes);

// Threshold used when no measurement is available: direct wherever it works
// (the previous fixed default, right for NVLink pairs).
inline constexpr std::size_t kFallbackThresh = model::kNever;

// The choice for data moving from src_dev to dst_dev (ordinals; -1 = host
// memory, at most one side), obtained once per process. Thread-safe; the
// reference stays valid.
const PairChoice &pair_choice(int src_dev, int dst_dev, const CrossoverConfig &cfg);

// The obtain step of any wire (pair_choice's, the RDMA wire's per port:
// include/gdrpipe/rdma/port_crossover.hpp): cache or measure through
// model::obtain_shared with cfg's mode/dir/wait, fill c (origin, thresh,
// cache_path, took_ms); on failure c.thresh = fallback_thresh, a warning,
// nothing stored. The caller logs "crossover for <label> <describe()>".
struct ObtainRequest {
    model::CalibKey key;
    model::ProberFactory make;
    model::CalibOptions options;
    std::string lock_name; // "": the key's
    std::size_t fallback_thresh = kFallbackThresh;
    std::string fallback_what = "direct wherever it works";
};
void obtain_choice(PairChoice &c, const ObtainRequest &r, const CrossoverConfig &cfg);

// Same as the CLI's key, so gdrpipe-calibrate fills the plugin's cache.
// dev_a: the source, dev_b: the destination (< 0: host memory).
model::CalibKey device_pair_key(int dev_a, int dev_b, bool peer);

// "GPU-xxxxxxxx-xxxx-..." of an ordinal ("" when invalid).
std::string gpu_uuid_string(int ordinal);

// "GPU 1a2b3c4d..5e6f" (the label of the log lines; "GPU <n>" without a UUID).
std::string gpu_label(int ordinal);

// Puts an engine's checked size classes into the pair's cache entry (when it
// has one; classes the entry holds and `classes` lacks are kept), so that
// later processes use the corrected rule without checking those classes.
void store_online_check(const PairChoice &c, const CrossoverConfig &cfg,
                        const std::vector<model::OnlineClass> &classes);

// Forgets every pair (tests).
void reset_pair_choices();

} // namespace gdrpipe::pipeline
