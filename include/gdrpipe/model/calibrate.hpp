// Calibration driver: measures the direct and the host-staged path between one
// pair of endpoints through a Prober, chooses the staged pipeline's chunk size
// and depth, sweeps sizes, and fits a CostModel.
//
// Time: the Prober REPORTS the duration of each transfer; the driver never
// times transfers itself. It reads `CalibOptions::clock` only to keep to its
// overall budget, so tests run on a fake clock and never sleep.
#pragma once
#include "gdrpipe/model/calib_record.hpp"
#include "gdrpipe/model/types.hpp"

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gdrpipe::model {

class Prober {
public:
    virtual ~Prober() = default;
    // Seconds taken by ONE transfer of `bytes` over path `p`; `pp` shapes the
    // staged pipeline (ignored for direct). nullopt = path unavailable/failed.
    virtual std::optional<double> time_once(Path p, std::size_t bytes, const PipelineParams &pp) = 0;
};

// Monotonic seconds.
using Clock = std::function<double()>;
Clock steady_clock_seconds();

enum class CalibPhase : int { tune = 0, sweep, refine, fit };
const char *phase_name(CalibPhase p) noexcept;

struct CalibProgress {
    CalibPhase phase = CalibPhase::tune;
    std::size_t probes_done = 0;
    std::size_t probes_planned = 0; // estimate; may be exceeded or not reached
    double elapsed_s = 0.0;
    double budget_s = 0.0;
    std::size_t bytes = 0; // of the probe just made
    Path path = Path::direct;
};
using ProgressFn = std::function<void(const CalibProgress &)>;

struct CalibOptions {
    std::size_t min_bytes = 1;
    std::size_t max_bytes = std::size_t{64} << 20;
    int repeats = 5;             // samples per point (>= 1); 3 when one path clearly wins
    double outlier_mads = 3.0;   // samples farther than this many scaled MADs are dropped
    double budget_s = 0.5;       // whole calibration (tuning + sweep + refinement)
    double tune_share = 0.4;     // at most this part of the budget goes to the pipeline grid
    bool tune_pipeline = true;
    std::size_t tune_bytes = 0;  // size at which the grid is probed; 0 = max_bytes
    std::vector<std::size_t> chunk_candidates{std::size_t{256} << 10, std::size_t{512} << 10,
                                              std::size_t{1} << 20,   std::size_t{2} << 20,
                                              std::size_t{4} << 20,   std::size_t{8} << 20};
    std::vector<int> depth_candidates{2, 4, 8};
    PipelineParams pipeline;     // used when not tuning, or when tuning measured nothing
    int refine_steps = 4;        // geometric bisections of each winner change
    int max_refined_crossings = 3;
    Clock clock;                 // default: steady clock
    ProgressFn progress;         // called after every probe
    const std::atomic<bool> *cancel = nullptr; // set to stop: calibrate() returns cancelled
};

enum class CalibStatus : int {
    ok = 0,
    cancelled,   // cancel flag seen; nothing was kept
    no_path,     // neither path worked at any size
    no_data,     // the budget ran out before any point was measured
    bad_options
};
const char *calib_status_name(CalibStatus s) noexcept;

struct CalibResult {
    CalibStatus status = CalibStatus::bad_options;
    std::string message; // human-readable reason when status != ok
    CalibRecord record;  // meaningful only when status == ok
};

CalibResult calibrate(Prober &prober, const CalibOptions &options);

// The size sweep before refinement: min_bytes, then x4 steps, then max_bytes.
std::vector<std::size_t> sweep_sizes(std::size_t min_bytes, std::size_t max_bytes);

} // namespace gdrpipe::model
