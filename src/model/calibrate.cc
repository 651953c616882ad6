#include "gdrpipe/model/calibrate.hpp"

#include "gdrpipe/log.hpp"
#include "gdrpipe/model/cost_model.hpp"
#include "gdrpipe/model/robust_stats.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>

namespace gdrpipe::model {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kClearRatio = 1.5; // one path this much faster: 3 samples are enough

constexpr double kTypical = 1.25;   // a median this close to the fastest sample is not an outlier
constexpr double kSuspect = 1.5;    // a point this far from its fit is measured again
constexpr int kMaxRechecks = 4;

int idx(Path p) { return p == Path::direct ? 0 : 1; }

bool consistent(const std::vector<double> &s) {
    return median(s) <= kTypical * *std::min_element(s.begin(), s.end());
}

class Driver {
public:
    Driver(Prober &prober, const CalibOptions &o)
        : prober_(prober), o_(o), clock_(o.clock ? o.clock : steady_clock_seconds()) {}

    CalibResult run();

private:
    enum class Got { ok, failed, stop };
    struct Out {
        Got got;
        double t;
    };

    double elapsed() const { return clock_() - t0_; }
    double estimate(Path p, std::size_t n) const;
    Out probe(Path p, std::size_t n, const PipelineParams &pp, CalibPhase ph, double limit);
    void tune();
    std::optional<MeasuredPoint> measure_point(std::size_t n, CalibPhase ph);
    void refine();
    void recheck();

    Prober &prober_;
    const CalibOptions &o_;
    Clock clock_;
    double t0_ = 0;
    std::size_t probes_ = 0;
    std::size_t planned_ = 0;
    bool cancelled_ = false;
    bool exhausted_ = false;
    PipelineParams pp_;
    std::size_t tune_bytes_ = 0;
    std::vector<PipelineTrial> trials_;
    std::vector<MeasuredPoint> table_;
    std::map<std::size_t, std::vector<double>> seen_[2];
    std::vector<double> tune_seen_; // every pipeline shape's samples, for the tuning budget
    int failed_sizes_[2] = {0, 0};
    bool ever_ok_[2] = {false, false};
    bool dead_[2] = {false, false};
};

// Expected duration of the next probe, from what was seen so far: the median
// at that size, else the nearest smaller size seen scaled up linearly (an
// over-estimate). 0 when only larger sizes were seen: unknown, but cheaper.
double Driver::estimate(Path p, std::size_t n) const {
    const auto &m = seen_[idx(p)];
    auto it = m.upper_bound(n);
    if (it == m.begin()) return 0.0;
    --it;
    if (it->first == n) return median(it->second);
    return median(it->second) * static_cast<double>(n) / static_cast<double>(std::max<std::size_t>(it->first, 1));
}

Driver::Out Driver::probe(Path p, std::size_t n, const PipelineParams &pp, CalibPhase ph, double limit) {
    if (cancelled_ || exhausted_) return {Got::stop, 0};
    if (o_.cancel != nullptr && o_.cancel->load(std::memory_order_relaxed)) {
        cancelled_ = true;
        return {Got::stop, 0};
    }
    // tuning probes are the largest: be pessimistic there, the sweep still needs its share
    const double expect = ph == CalibPhase::tune
                              ? (tune_seen_.empty() ? 0.0 : *std::max_element(tune_seen_.begin(), tune_seen_.end()))
                              : estimate(p, n);
    if (elapsed() + expect > limit) {
        if (limit >= o_.budget_s) exhausted_ = true;
        return {Got::stop, 0};
    }
    const std::optional<double> r = prober_.time_once(p, n, pp);
    ++probes_;
    Out out{Got::failed, 0};
    if (r && std::isfinite(*r) && *r > 0) {
        out = {Got::ok, *r};
        // a pipeline shape other than the chosen one does not predict the sweep
        if (p == Path::direct || pp == pp_) seen_[idx(p)][n].push_back(*r);
        if (ph == CalibPhase::tune) tune_seen_.push_back(*r);
    }
    if (o_.progress) {
        CalibProgress pr;
        pr.phase = ph;
        pr.probes_done = probes_;
        pr.probes_planned = std::max(planned_, probes_);
        pr.elapsed_s = elapsed();
        pr.budget_s = o_.budget_s;
        pr.bytes = n;
        pr.path = p;
        o_.progress(pr);
    }
    return out;
}

void Driver::tune() {
    tune_bytes_ = o_.tune_bytes != 0 ? std::min(o_.tune_bytes, o_.max_bytes) : o_.max_bytes;
    std::vector<std::size_t> chunks = o_.chunk_candidates;
    std::sort(chunks.begin(), chunks.end());
    chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
    chunks.erase(std::remove(chunks.begin(), chunks.end(), std::size_t{0}), chunks.end());
    std::vector<int> depths = o_.depth_candidates;
    std::sort(depths.begin(), depths.end());
    depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
    depths.erase(std::remove_if(depths.begin(), depths.end(), [](int d) { return d < 1; }), depths.end());
    if (chunks.empty() || depths.empty()) return;
    // chunks above the probed size all behave the same: keep the smallest of them
    std::vector<std::size_t> use;
    for (std::size_t c : chunks) {
        if (c <= tune_bytes_ || use.empty() || use.back() < tune_bytes_) use.push_back(c);
    }
    struct Cfg {
        PipelineParams pp;
        std::vector<double> s;
        bool failed = false;
    };
    std::vector<Cfg> cfg;
    for (std::size_t c : use) {
        for (int d : depths) cfg.push_back({PipelineParams{c, d}, {}, false});
    }
    // nearest to the configured shape first, so a cut-short grid explores around it
    const auto dist = [&](const Cfg &c) {
        return std::fabs(std::log2(static_cast<double>(c.pp.chunk_bytes) /
                                   static_cast<double>(std::max<std::size_t>(o_.pipeline.chunk_bytes, 1)))) +
               std::fabs(std::log2(static_cast<double>(c.pp.depth) / std::max(o_.pipeline.depth, 1)));
    };
    std::stable_sort(cfg.begin(), cfg.end(), [&](const Cfg &a, const Cfg &b) { return dist(a) < dist(b); });
    const int first = std::min(2, o_.repeats);
    const std::size_t keep = std::min(cfg.size(), std::max<std::size_t>(3, (cfg.size() + 3) / 4));
    planned_ += cfg.size() * static_cast<std::size_t>(first) +
                keep * static_cast<std::size_t>(std::max(0, o_.repeats - first));
    const double limit = o_.tune_share * o_.budget_s;
    bool stop = false;
    // round 1: every shape twice, ranked by its best sample (outliers only slow things down)
    for (int r = 0; r < first && !stop; ++r) {
        for (Cfg &c : cfg) {
            if (c.failed) continue;
            Out out = probe(Path::staged, tune_bytes_, c.pp, CalibPhase::tune, limit);
            if (out.got == Got::stop) {
                stop = true;
                break;
            }
            if (out.got == Got::failed) c.failed = true;
            else c.s.push_back(out.t);
        }
    }
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < cfg.size(); ++i) {
        if (!cfg[i].failed && !cfg[i].s.empty()) order.push_back(i);
    }
    auto best_sample = [&](std::size_t i) { return *std::min_element(cfg[i].s.begin(), cfg[i].s.end()); };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return best_sample(a) < best_sample(b); });
    if (order.size() > keep) order.resize(keep);
    // round 2: the leaders get the full number of repeats
    for (int r = first; r < o_.repeats && !stop; ++r) {
        for (std::size_t i : order) {
            if (cfg[i].failed) continue;
            Out out = probe(Path::staged, tune_bytes_, cfg[i].pp, CalibPhase::tune, limit);
            if (out.got == Got::stop) {
                stop = true;
                break;
            }
            if (out.got == Got::failed) cfg[i].failed = true;
            else cfg[i].s.push_back(out.t);
        }
    }
    double best = kInf;
    for (std::size_t i : order) {
        if (cfg[i].failed || cfg[i].s.empty()) continue;
        const double v = robust_median(cfg[i].s, o_.outlier_mads).value;
        if (v < best) {
            best = v;
            pp_ = cfg[i].pp;
        }
    }
    for (const Cfg &c : cfg) {
        PipelineTrial t;
        t.params = c.pp;
        t.samples = static_cast<int>(c.s.size());
        t.time_s = (c.failed || c.s.empty()) ? kInf : robust_median(c.s, o_.outlier_mads).value;
        trials_.push_back(t);
    }
    // the best shape's samples predict the sweep's cost at this size
    for (const Cfg &c : cfg) {
        if (c.pp == pp_ && !c.s.empty()) seen_[1][tune_bytes_] = c.s;
    }
    if (!std::isfinite(best)) {
        GP_DEBUG("calibrate: pipeline tuning measured nothing, keeping chunk %zu depth %d",
                 pp_.chunk_bytes, pp_.depth);
    }
}

std::optional<MeasuredPoint> Driver::measure_point(std::size_t n, CalibPhase ph) {
    std::vector<double> s[2];
    int fails[2] = {0, 0};
    const int enough = std::min(3, o_.repeats);
    bool stopped = false;
    for (int r = 0; r < o_.repeats && !stopped; ++r) {
        if (r >= enough) {
            // stop early only when every median is a typical sample (not an
            // outlier: outliers are slow) and the decision is clear
            const bool have0 = !s[0].empty(), have1 = !s[1].empty();
            const bool typical = (!have0 || consistent(s[0])) && (!have1 || consistent(s[1]));
            if (typical && have0 != have1) break; // only one path works here
            if (typical && have0 && have1) {
                const double a = median(s[0]), b = median(s[1]);
                if (a > kClearRatio * b || b > kClearRatio * a) break;
            }
        }
        for (int k = 0; k < 2; ++k) {
            // alternate which path goes first, so drift does not favour one
            const int pi = (r % 2 == 0) ? k : 1 - k;
            if (dead_[pi]) continue;
            if (s[pi].empty() && fails[pi] >= 2) continue; // does not work at this size
            const Path p = pi == 0 ? Path::direct : Path::staged;
            Out out = probe(p, n, pp_, ph, o_.budget_s);
            if (out.got == Got::stop) {
                stopped = true;
                break;
            }
            if (out.got == Got::failed) ++fails[pi];
            else s[pi].push_back(out.t);
        }
    }
    MeasuredPoint pt;
    pt.bytes = n;
    for (int k = 0; k < 2; ++k) {
        const bool known = dead_[k] || !s[k].empty() || fails[k] > 0;
        if (stopped && !known) return std::nullopt; // half a point would lie
        std::optional<double> v;
        if (!s[k].empty() && s[k].size() >= static_cast<std::size_t>(fails[k])) {
            v = robust_median(s[k], o_.outlier_mads).value;
        }
        (k == 0 ? pt.direct_s : pt.staged_s) = v;
        if (dead_[k]) continue;
        if (v) {
            ever_ok_[k] = true;
        } else if (++failed_sizes_[k] >= 2 && !ever_ok_[k]) {
            dead_[k] = true;
            GP_DEBUG("calibrate: %s path failed at every size so far; not probing it again",
                     path_name(k == 0 ? Path::direct : Path::staged));
        }
    }
    return pt;
}

int winner(const MeasuredPoint &p) {
    const double d = p.direct_s.value_or(kInf), s = p.staged_s.value_or(kInf);
    if (!std::isfinite(d) && !std::isfinite(s)) return 0;
    return s < d ? 1 : -1;
}

void Driver::refine() {
    std::sort(table_.begin(), table_.end(),
              [](const MeasuredPoint &a, const MeasuredPoint &b) { return a.bytes < b.bytes; });
    std::vector<std::pair<MeasuredPoint, MeasuredPoint>> flips;
    const MeasuredPoint *prev = nullptr;
    for (const MeasuredPoint &p : table_) {
        if (winner(p) == 0) continue;
        if (prev != nullptr && winner(*prev) != winner(p)) flips.emplace_back(*prev, p);
        prev = &p;
    }
    if (static_cast<int>(flips.size()) > o_.max_refined_crossings) {
        flips.resize(static_cast<std::size_t>(std::max(0, o_.max_refined_crossings)));
    }
    planned_ += flips.size() * static_cast<std::size_t>(o_.refine_steps) * 2u *
                static_cast<std::size_t>(o_.repeats);
    for (const auto &[plo, phi] : flips) {
        std::size_t lo = plo.bytes, hi = phi.bytes;
        const int wl = winner(plo);
        for (int step = 0; step < o_.refine_steps; ++step) {
            const auto mid = static_cast<std::size_t>(
                std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
            if (mid <= lo || mid >= hi) break;
            std::optional<MeasuredPoint> pt = measure_point(mid, CalibPhase::refine);
            if (!pt) return;
            table_.push_back(*pt);
            const int w = winner(*pt);
            if (w == 0) break;
            if (w == wl) lo = mid;
            else hi = mid;
        }
    }
}

// Points far from their path's fit are most likely outliers that survived
// (several slow samples at one size): measure the worst few again.
void Driver::recheck() {
    const CostModel m = CostModel::fit(table_, pp_);
    std::vector<std::pair<double, std::size_t>> suspects; // (deviation, index)
    for (std::size_t i = 0; i < table_.size(); ++i) {
        double dev = 0;
        for (Path p : {Path::direct, Path::staged}) {
            const std::optional<double> t = table_[i].time(p);
            const double f = m.predict(p, table_[i].bytes);
            if (t && std::isfinite(f) && f > 0) dev = std::max(dev, std::fabs(std::log(*t / f)));
        }
        if (dev > std::log(kSuspect)) suspects.emplace_back(dev, i);
    }
    std::sort(suspects.begin(), suspects.end(), std::greater<>());
    if (suspects.size() > static_cast<std::size_t>(kMaxRechecks)) suspects.resize(kMaxRechecks);
    planned_ += suspects.size() * 2u * static_cast<std::size_t>(o_.repeats);
    for (const auto &[dev, i] : suspects) {
        std::optional<MeasuredPoint> pt = measure_point(table_[i].bytes, CalibPhase::refine);
        if (!pt) return;
        GP_DEBUG("calibrate: %zu B was %.2fx off the fit; measured again", table_[i].bytes, std::exp(dev));
        table_[i] = *pt;
    }
}

CalibResult Driver::run() {
    CalibResult res;
    if (o_.min_bytes < 1 || o_.max_bytes < o_.min_bytes || o_.repeats < 1 || !(o_.budget_s > 0) ||
        o_.tune_share < 0 || o_.tune_share > 1) {
        res.status = CalibStatus::bad_options;
        res.message = "invalid calibration options";
        return res;
    }
    t0_ = clock_();
    pp_ = o_.pipeline;
    const std::vector<std::size_t> sizes = sweep_sizes(o_.min_bytes, o_.max_bytes);
    planned_ = sizes.size() * 2u * static_cast<std::size_t>(o_.repeats);
    if (o_.tune_pipeline) tune();

    for (std::size_t n : sizes) {
        std::optional<MeasuredPoint> pt = measure_point(n, CalibPhase::sweep);
        if (!pt) break;
        table_.push_back(*pt);
    }
    if (!cancelled_ && !exhausted_) refine();
    if (!cancelled_ && !exhausted_) recheck();

    if (cancelled_) {
        res.status = CalibStatus::cancelled;
        res.message = "calibration cancelled";
        return res;
    }
    bool any = false;
    for (const MeasuredPoint &p : table_) any = any || p.direct_s || p.staged_s;
    if (!any) {
        res.status = table_.empty() && exhausted_ ? CalibStatus::no_data : CalibStatus::no_path;
        res.message = res.status == CalibStatus::no_data
                          ? "time budget ran out before any size was measured"
                          : "neither the direct nor the staged path worked at any size";
        return res;
    }
    CalibRecord &rec = res.record;
    rec.model = CostModel::fit(table_, pp_);
    rec.pipeline = pp_;
    rec.tune_bytes = o_.tune_pipeline ? tune_bytes_ : 0;
    rec.pipeline_trials = trials_;
    rec.budget_s = o_.budget_s;
    rec.budget_exhausted = exhausted_;
    rec.probes = probes_;
    rec.date = utc_now_iso8601();
    rec.elapsed_s = elapsed();
    if (o_.progress) {
        CalibProgress pr;
        pr.phase = CalibPhase::fit;
        pr.probes_done = probes_;
        pr.probes_planned = probes_;
        pr.elapsed_s = rec.elapsed_s;
        pr.budget_s = o_.budget_s;
        o_.progress(pr);
    }
    if (exhausted_) {
        GP_INFO("calibrate: time budget %.3f s reached after %zu probes; fitted %zu sizes",
                o_.budget_s, probes_, table_.size());
    }
    res.status = CalibStatus::ok;
    return res;
}

} // namespace

const char *path_name(Path p) noexcept { return p == Path::direct ? "direct" : "staged"; }

const char *source_name(Source s) noexcept {
    switch (s) {
    case Source::measured: return "measured now";
    case Source::cache: return "cache";
    case Source::configured: return "configured";
    }
    return "?";
}

const char *phase_name(CalibPhase p) noexcept {
    switch (p) {
    case CalibPhase::tune: return "tune";
    case CalibPhase::sweep: return "sweep";
    case CalibPhase::refine: return "refine";
    case CalibPhase::fit: return "fit";
    }
    return "?";
}

const char *calib_status_name(CalibStatus s) noexcept {
    switch (s) {
    case CalibStatus::ok: return "ok";
    case CalibStatus::cancelled: return "cancelled";
    case CalibStatus::no_path: return "no-path";
    case CalibStatus::no_data: return "no-data";
    case CalibStatus::bad_options: return "bad-options";
    }
    return "?";
}

Clock steady_clock_seconds() {
    return [] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
}

std::string utc_now_iso8601() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::vector<std::size_t> sweep_sizes(std::size_t min_bytes, std::size_t max_bytes) {
    std::vector<std::size_t> v;
    if (min_bytes < 1 || max_bytes < min_bytes) return v;
    for (std::size_t n = min_bytes;; n *= 4) {
        v.push_back(n);
        if (n > max_bytes / 4) break;
    }
    if (v.back() != max_bytes) v.push_back(max_bytes);
    return v;
}

CalibResult calibrate(Prober &prober, const CalibOptions &options) {
    Driver d(prober, options);
    return d.run();
}

} // namespace gdrpipe::model
