#include "gdrpipe/model/report.hpp"

#include <cmath>
#include <cstdio>

namespace gdrpipe::model {
namespace {

std::string printf_str(const char *fmt, double v, const char *unit) {
    char b[64];
    std::snprintf(b, sizeof(b), fmt, v, unit);
    return b;
}

std::string format_bw(double bps) {
    if (!std::isfinite(bps)) return "unbounded";
    return printf_str("%.3g %s", bps / 1e9, "GB/s");
}

std::string margin(const MeasuredPoint &p, Path chosen) {
    const std::optional<double> tc = p.time(chosen);
    const std::optional<double> to = p.time(chosen == Path::direct ? Path::staged : Path::direct);
    if (!tc) return to ? "FAILS" : "-";
    if (!to) return "only path";
    char b[32];
    std::snprintf(b, sizeof(b), "%+.1f %%", (*to / *tc - 1.0) * 100.0);
    return b;
}

} // namespace

std::string format_bytes(std::size_t n) {
    if (n == kNever) return "never";
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        ++u;
    }
    char b[32];
    if (u == 0 || v == std::floor(v)) std::snprintf(b, sizeof(b), "%.0f %s", v, units[u]);
    else std::snprintf(b, sizeof(b), "%.3g %s", v, units[u]);
    return b;
}

std::string format_seconds(double s) {
    if (!std::isfinite(s)) return "n/a";
    if (s < 1e-6) return printf_str("%.0f %s", s * 1e9, "ns");
    if (s < 1e-3) return printf_str("%.3g %s", s * 1e6, "us");
    if (s < 1.0) return printf_str("%.3g %s", s * 1e3, "ms");
    return printf_str("%.3g %s", s, "s");
}

std::string format_fit(const PathFit &f) {
    if (!f.available) return "unavailable";
    std::string s = "t = " + format_seconds(f.latency_s);
    if (f.chunked) s += " + " + format_seconds(f.per_chunk_s) + " * ceil(n / " + format_bytes(f.chunk_bytes) + ")";
    s += " + n / " + format_bw(f.bandwidth_Bps);
    char b[96];
    std::snprintf(b, sizeof(b), "  (rms error %.1f %%, %d points, %d rejected)", f.rms_rel_err * 100.0,
                  f.points, f.rejected);
    return s + b;
}

std::string format_threshold(const Crossover &x) {
    switch (x.kind) {
    case CrossoverKind::direct_always: return "none: direct at every size";
    case CrossoverKind::staged_always: return "0: staged at every size";
    case CrossoverKind::single:
        return format_bytes(x.threshold) + " (direct below, staged from there on)";
    case CrossoverKind::staged_below:
        return format_bytes(x.threshold) + " (staged below, direct from there on)";
    case CrossoverKind::multiple:
        return (x.threshold == kNever ? std::string("never (direct at every size)")
                : x.threshold == 0    ? std::string("0 (staged at every size)")
                                      : format_bytes(x.threshold) + (x.below == Path::direct
                                                                         ? " (direct below, staged from)"
                                                                         : " (staged below, direct from)")) +
               "; the measured winner changes " + std::to_string(x.measured_switches) +
               " times, this single threshold has the least measured regret";
    }
    return "?";
}

std::string format_report(const CalibRecord &rec, Source source) {
    const CostModel &m = rec.model;
    std::string s = "gdrpipe crossover calibration\n";
    s += std::string("  source:     ") + source_name(source);
    if (!rec.date.empty()) s += ", " + rec.date;
    s += "\n";
    if (source != Source::configured) {
        char b[160];
        std::snprintf(b, sizeof(b), "  probing:    %s in %zu probes (budget %s)%s\n",
                      format_seconds(rec.elapsed_s).c_str(), rec.probes, format_seconds(rec.budget_s).c_str(),
                      rec.budget_exhausted ? ", budget reached: fitted what was measured" : "");
        s += b;
        s += "  pipeline:   chunk " + format_bytes(rec.pipeline.chunk_bytes) + ", depth " +
             std::to_string(rec.pipeline.depth);
        if (rec.tune_bytes != 0) {
            s += " (best of " + std::to_string(rec.pipeline_trials.size()) + " shapes at " +
                 format_bytes(rec.tune_bytes) + ")";
        }
        s += "\n";
        s += "  direct fit: " + format_fit(m.fit_of(Path::direct)) + "\n";
        s += "  staged fit: " + format_fit(m.fit_of(Path::staged)) + "\n";
    }
    s += "  crossover:  " + format_threshold(m.crossover()) + "\n";
    if (!m.crossover().staged_ranges.empty()) {
        s += "  fit says staged is faster in:";
        for (const SizeRange &r : m.crossover().staged_ranges) {
            s += " [" + format_bytes(r.lo) + ", " + (r.hi == kNever ? std::string("...") : format_bytes(r.hi)) + ")";
        }
        s += "\n";
    }
    if (!m.table().empty()) {
        char b[160];
        std::snprintf(b, sizeof(b), "  %12s %12s %12s %8s %10s\n", "size", "direct", "staged", "chosen", "margin");
        s += b;
        for (const MeasuredPoint &p : m.table()) {
            const Path c = m.choose(p.bytes);
            std::snprintf(b, sizeof(b), "  %12s %12s %12s %8s %10s\n", format_bytes(p.bytes).c_str(),
                          p.direct_s ? format_seconds(*p.direct_s).c_str() : "fails",
                          p.staged_s ? format_seconds(*p.staged_s).c_str() : "fails", path_name(c),
                          margin(p, c).c_str());
            s += b;
        }
        s += "  (margin: how much longer the other path takes than the chosen one)\n";
    }
    return s;
}

std::string format_summary(const CalibRecord &rec, Source source) {
    const CostModel &m = rec.model;
    std::string s = "crossover " + format_threshold(m.crossover()) + " [" + source_name(source) + "]";
    if (source != Source::configured) {
        s += "; pipeline chunk " + format_bytes(rec.pipeline.chunk_bytes) + " depth " + std::to_string(rec.pipeline.depth);
        const PathFit &d = m.fit_of(Path::direct), &st = m.fit_of(Path::staged);
        s += "; direct " + (d.available ? format_seconds(d.latency_s) + " + n/" + format_bw(d.bandwidth_Bps) : "unavailable");
        s += "; staged " + (st.available ? format_seconds(st.latency_s) + " + n/" + format_bw(st.bandwidth_Bps) : "unavailable");
        s += "; calibrated in " + format_seconds(rec.elapsed_s);
    }
    return s;
}

} // namespace gdrpipe::model
