// Everything one calibration produced: what the cache stores and the report
// and plot print.
#pragma once
#include "gdrpipe/model/cost_model.hpp"
#include "gdrpipe/model/types.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace gdrpipe::model {

// One staged-pipeline shape tried while choosing chunk size and depth.
struct PipelineTrial {
    PipelineParams params;
    double time_s = 0.0; // robust time at CalibRecord::tune_bytes; +inf = failed
    int samples = 0;
    bool operator==(const PipelineTrial &) const = default;
};

// What real transfers of one size class cost beyond each fitted curve, as a
// plugin measured it through a peer (pipeline/online_check.hpp).
struct OnlineClass {
    std::size_t bytes = 0;  // the class's median sampled size
    int samples = 0;        // per path
    double direct_s = 0.0;  // median (measured - predicted) of each path, seconds
    double staged_s = 0.0;
    bool operator==(const OnlineClass &) const = default;
};

struct CalibRecord {
    CostModel model;
    PipelineParams pipeline;                  // chosen chunk size and depth
    std::size_t tune_bytes = 0;               // size the pipeline grid was probed at (0: not tuned)
    std::vector<PipelineTrial> pipeline_trials;
    double elapsed_s = 0.0;                   // wall time of the whole calibration
    double budget_s = 0.0;
    bool budget_exhausted = false;            // stopped early, fitted what was there
    std::size_t probes = 0;                   // Prober::time_once calls
    std::string date;                         // ISO 8601 UTC, e.g. 2026-11-30T12:00:00Z
    // The check through the peer (pipeline/online_check.hpp), per size class
    // a plugin completed, ascending by size; empty: not checked.
    std::vector<OnlineClass> online;
    bool operator==(const CalibRecord &) const = default;
};

// Current UTC time as ISO 8601 ("YYYY-MM-DDTHH:MM:SSZ").
std::string utc_now_iso8601();

} // namespace gdrpipe::model
