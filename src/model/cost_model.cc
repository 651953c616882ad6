#include "gdrpipe/model/cost_model.hpp"

#include "gdrpipe/model/robust_stats.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace gdrpipe::model {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kRegretCap = 1.0;

double ceil_div(std::size_t n, std::size_t d) {
    return d == 0 ? 0.0 : static_cast<double>((n + d - 1) / d);
}

struct Pt {
    std::size_t n;
    double t;
};

// Coefficients of the form a + x*n + c*ceil(n/chunk) (x = 1/bandwidth).
struct Coef {
    bool ok = false;
    double a = 0, x = 0, c = 0;
    double sse = kInf;
};

double eval(const Coef &k, std::size_t n, std::size_t chunk) {
    return k.a + k.x * static_cast<double>(n) + k.c * ceil_div(n, chunk);
}

// Relative least squares restricted to the features in `mask` (bit0 = a,
// bit1 = x, bit2 = c): minimise sum((model/t - 1)^2). Columns are scaled to
// keep the normal equations well conditioned.
Coef solve_subset(const std::vector<Pt> &pts, unsigned mask, std::size_t chunk) {
    Coef out;
    std::array<int, 3> idx{};
    int k = 0;
    for (int f = 0; f < 3; ++f) {
        if (mask & (1u << f)) idx[static_cast<std::size_t>(k++)] = f;
    }
    if (k == 0 || static_cast<int>(pts.size()) < k) return out;
    auto feat = [&](const Pt &p, int f) {
        switch (f) {
        case 0: return 1.0 / p.t;
        case 1: return static_cast<double>(p.n) / p.t;
        default: return ceil_div(p.n, chunk) / p.t;
        }
    };
    std::array<double, 3> scale{0, 0, 0};
    for (const Pt &p : pts) {
        for (int j = 0; j < k; ++j) {
            scale[static_cast<std::size_t>(j)] =
                std::max(scale[static_cast<std::size_t>(j)], std::fabs(feat(p, idx[static_cast<std::size_t>(j)])));
        }
    }
    for (int j = 0; j < k; ++j) {
        if (!(scale[static_cast<std::size_t>(j)] > 0)) return out;
    }
    double m[3][4] = {};
    for (const Pt &p : pts) {
        double row[3];
        for (int j = 0; j < k; ++j) {
            row[j] = feat(p, idx[static_cast<std::size_t>(j)]) / scale[static_cast<std::size_t>(j)];
        }
        for (int r = 0; r < k; ++r) {
            for (int c = 0; c < k; ++c) m[r][c] += row[r] * row[c];
            m[r][k] += row[r];
        }
    }
    double maxdiag = 0;
    for (int r = 0; r < k; ++r) maxdiag = std::max(maxdiag, m[r][r]);
    for (int col = 0; col < k; ++col) {
        int piv = col;
        for (int r = col + 1; r < k; ++r) {
            if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
        }
        if (std::fabs(m[piv][col]) <= 1e-11 * maxdiag) return out; // singular
        if (piv != col) {
            for (int c = 0; c <= k; ++c) std::swap(m[col][c], m[piv][c]);
        }
        for (int r = 0; r < k; ++r) {
            if (r == col) continue;
            const double f = m[r][col] / m[col][col];
            for (int c = col; c <= k; ++c) m[r][c] -= f * m[col][c];
        }
    }
    double coef[3] = {0, 0, 0};
    for (int j = 0; j < k; ++j) {
        const double v = m[j][k] / m[j][j] / scale[static_cast<std::size_t>(j)];
        if (!std::isfinite(v) || v < 0) return out; // infeasible: not >= 0
        coef[idx[static_cast<std::size_t>(j)]] = v;
    }
    out.a = coef[0];
    out.x = coef[1];
    out.c = coef[2];
    out.sse = 0;
    for (const Pt &p : pts) {
        const double r = eval(out, p.n, chunk) / p.t - 1.0;
        out.sse += r * r;
    }
    out.ok = true;
    return out;
}

// Non-negative least squares by enumerating feature subsets (at most 7).
Coef solve_nonneg(const std::vector<Pt> &pts, bool with_chunk, std::size_t chunk) {
    Coef best;
    const unsigned full = with_chunk ? 7u : 3u;
    for (unsigned mask = 1; mask <= full; ++mask) {
        if (with_chunk && !(mask & 4u)) continue; // the chunked form must use c
        Coef c = solve_subset(pts, mask, chunk);
        if (c.ok && c.sse < best.sse) best = c;
    }
    return best;
}

// Fit, drop points whose relative residual is an outlier, fit again.
Coef fit_robust(const std::vector<Pt> &pts, bool with_chunk, std::size_t chunk,
                int *used, int *rejected) {
    Coef c = solve_nonneg(pts, with_chunk, chunk);
    *used = static_cast<int>(pts.size());
    *rejected = 0;
    if (!c.ok || pts.size() < 5) return c;
    std::vector<double> res;
    for (const Pt &p : pts) res.push_back(eval(c, p.n, chunk) / p.t - 1.0);
    const double med = median(res);
    std::vector<double> dev;
    for (double r : res) dev.push_back(std::fabs(r - med));
    const double mad = 1.4826 * median(dev);
    if (!(mad > 0)) return c;
    // reject at most a quarter, worst first
    std::vector<std::size_t> order(pts.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) { return dev[l] > dev[r]; });
    std::vector<bool> drop(pts.size(), false);
    const std::size_t max_drop = pts.size() / 4;
    std::size_t dropped = 0;
    for (std::size_t i : order) {
        if (dropped >= max_drop) break;
        if (dev[i] > 3.0 * mad && std::fabs(res[i]) > 0.02) {
            drop[i] = true;
            ++dropped;
        }
    }
    if (dropped == 0) return c;
    std::vector<Pt> kept;
    for (std::size_t i = 0; i < pts.size(); ++i) {
        if (!drop[i]) kept.push_back(pts[i]);
    }
    Coef c2 = solve_nonneg(kept, with_chunk, chunk);
    if (!c2.ok) return c;
    *used = static_cast<int>(kept.size());
    *rejected = static_cast<int>(dropped);
    return c2;
}

PathFit to_fit(const Coef &c, bool chunked, std::size_t chunk, int used, int rejected) {
    PathFit f;
    f.available = true;
    f.latency_s = c.a;
    f.bandwidth_Bps = c.x > 0 ? 1.0 / c.x : kInf;
    f.chunked = chunked;
    f.per_chunk_s = chunked ? c.c : 0.0;
    f.chunk_bytes = chunked ? chunk : 0;
    f.points = used;
    f.rejected = rejected;
    f.rms_rel_err = used > 0 ? std::sqrt(c.sse / used) : 0.0;
    return f;
}

double regret_of(const MeasuredPoint &p, Path chosen) {
    const double td = p.direct_s.value_or(kInf);
    const double ts = p.staged_s.value_or(kInf);
    const double best = std::min(td, ts);
    if (!std::isfinite(best)) return 0.0; // nothing works here: no rule is better
    const double t = chosen == Path::direct ? td : ts;
    if (!std::isfinite(t)) return 1e3; // chose a path that does not work
    // capped: one wild point (an outlier that survived) must not outvote a
    // consistent run of neighbours; 1.0 = "twice as slow"
    return std::min(t / best - 1.0, kRegretCap);
}

} // namespace

const char *crossover_kind_name(CrossoverKind k) noexcept {
    switch (k) {
    case CrossoverKind::direct_always: return "direct-always";
    case CrossoverKind::staged_always: return "staged-always";
    case CrossoverKind::single: return "single";
    case CrossoverKind::multiple: return "multiple";
    case CrossoverKind::staged_below: return "staged-below";
    }
    return "?";
}

double PathFit::predict(std::size_t bytes) const noexcept {
    if (!available) return kInf;
    double t = latency_s;
    if (std::isfinite(bandwidth_Bps) && bandwidth_Bps > 0) t += static_cast<double>(bytes) / bandwidth_Bps;
    if (chunked) t += per_chunk_s * ceil_div(bytes, chunk_bytes);
    return t;
}

PathFit fit_path(const std::vector<std::pair<std::size_t, double>> &points, std::size_t chunk_bytes) {
    std::vector<Pt> pts;
    for (const auto &[n, t] : points) {
        if (std::isfinite(t) && t > 0) pts.push_back({n, t});
    }
    if (pts.empty()) return PathFit{};
    int used = 0, rej = 0;
    Coef lin = fit_robust(pts, false, 0, &used, &rej);
    PathFit best;
    if (lin.ok) best = to_fit(lin, false, 0, used, rej);
    // the chunk term is identifiable only with several sizes above one chunk
    int above = 0;
    for (const Pt &p : pts) above += p.n > chunk_bytes ? 1 : 0;
    if (chunk_bytes > 0 && above >= 2 && pts.size() >= 4) {
        int cu = 0, cr = 0;
        Coef ch = fit_robust(pts, true, chunk_bytes, &cu, &cr);
        if (ch.ok && ch.c > 0) {
            PathFit cf = to_fit(ch, true, chunk_bytes, cu, cr);
            if (!lin.ok || cf.rms_rel_err < 0.8 * best.rms_rel_err) best = cf;
        }
    }
    return best;
}

CostModel CostModel::fit(std::vector<MeasuredPoint> table, const PipelineParams &pipeline) {
    std::stable_sort(table.begin(), table.end(),
                     [](const MeasuredPoint &a, const MeasuredPoint &b) { return a.bytes < b.bytes; });
    // one row per size: the later row wins
    std::vector<MeasuredPoint> rows;
    for (const MeasuredPoint &p : table) {
        if (!rows.empty() && rows.back().bytes == p.bytes) rows.back() = p;
        else rows.push_back(p);
    }
    CostModel m;
    std::vector<std::pair<std::size_t, double>> dp, sp;
    for (const MeasuredPoint &p : rows) {
        if (p.direct_s) dp.emplace_back(p.bytes, *p.direct_s);
        if (p.staged_s) sp.emplace_back(p.bytes, *p.staged_s);
    }
    m.direct_ = fit_path(dp, 0);
    m.staged_ = fit_path(sp, pipeline.chunk_bytes);
    m.table_ = rows;

    // candidate rules: always staged, one threshold per gap in each
    // orientation, never staged
    auto gap_threshold = [&](std::size_t i, Path below) -> std::size_t {
        const std::size_t lo = rows[i].bytes, hi = rows[i + 1].bytes;
        const Path above = other_path(below);
        const double bl = rows[i].time(below).value_or(kInf), al = rows[i].time(above).value_or(kInf);
        const double bh = rows[i + 1].time(below).value_or(kInf), ah = rows[i + 1].time(above).value_or(kInf);
        // f(n) < 0 where `below` is cheaper by the fits
        auto f = [&m, below](std::size_t n) {
            return m.predict(below, n) - m.predict(other_path(below), n);
        };
        std::size_t t;
        if (hi - lo <= 1) {
            t = hi;
        } else if (!std::isfinite(bh)) {
            t = lo + 1; // `below` stops working somewhere in the gap: switch early
        } else if (!std::isfinite(al)) {
            t = hi;
        } else if (std::isfinite(bl) && std::isfinite(ah) && (bl < al) != (bh < ah)) {
            // the measured curves cross in the gap: interpolate in log-log
            const double dl = std::log(bl / al), dh = std::log(bh / ah);
            const double ll = std::log(static_cast<double>(lo)), lh = std::log(static_cast<double>(hi));
            t = static_cast<std::size_t>(std::ceil(std::exp(ll + (0.0 - dl) / (dh - dl) * (lh - ll))));
        } else if (f(lo) < 0 && f(hi) >= 0) {
            std::size_t a = lo, b = hi; // f(a) < 0 <= f(b)
            while (b - a > 1) {
                const std::size_t mid = a + (b - a) / 2;
                if (f(mid) >= 0) b = mid;
                else a = mid;
            }
            t = b;
        } else {
            t = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
        }
        return std::clamp(t, lo + 1, hi);
    };
    struct Rule {
        std::size_t t;
        Path below;
    };
    std::vector<Rule> cand;
    cand.push_back({0, Path::direct});
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) cand.push_back({gap_threshold(i, Path::direct), Path::direct});
    cand.push_back({kNever, Path::direct});
    for (std::size_t i = 0; i + 1 < rows.size(); ++i) cand.push_back({gap_threshold(i, Path::staged), Path::staged});

    double best_score = kInf;
    Rule best{kNever, Path::direct};
    for (const Rule &r : cand) {
        double s = 0;
        for (const MeasuredPoint &p : rows) {
            s += regret_of(p, p.bytes < r.t ? r.below : other_path(r.below));
        }
        // strictly better only: on a tie the earlier (usual-form) rule stays
        if (s < best_score - 1e-12) {
            best_score = s;
            best = r;
        }
    }
    Crossover &x = m.crossover_;
    x.threshold = rows.empty() ? kNever : best.t;
    x.below = rows.empty() ? Path::direct : best.below;
    x.regret = rows.empty() ? 0.0 : best_score;

    // winner changes along the sizes, ignoring near-ties (within 5 %)
    int last = 0;
    for (const MeasuredPoint &p : rows) {
        const double td = p.direct_s.value_or(kInf), ts = p.staged_s.value_or(kInf);
        if (!std::isfinite(td) && !std::isfinite(ts)) continue;
        int w = 0;
        if (ts * 1.05 < td) w = 1;
        else if (td * 1.05 < ts) w = -1;
        if (w == 0) continue;
        if (last != 0 && w != last) ++x.measured_switches;
        last = w;
    }
    if (x.measured_switches >= 2) x.kind = CrossoverKind::multiple;
    else if (x.below == Path::staged) x.kind = CrossoverKind::staged_below;
    else if (x.threshold == kNever) x.kind = CrossoverKind::direct_always;
    else if (x.threshold == 0) x.kind = CrossoverKind::staged_always;
    else x.kind = CrossoverKind::single;

    // where the fit says staged is cheaper (informational)
    if (m.direct_.available || m.staged_.available) {
        const double top = rows.empty() ? double(std::size_t{1} << 28) : 4.0 * double(rows.back().bytes);
        auto staged_wins = [&m](std::size_t n) { return m.staged_.predict(n) < m.direct_.predict(n); };
        std::size_t prev = 1;
        bool in = staged_wins(1);
        std::size_t start = 1;
        for (double g = 1.0; g <= top;) {
            g *= std::pow(2.0, 0.125);
            const std::size_t n = static_cast<std::size_t>(std::min(g, top));
            if (n <= prev) continue;
            const bool s = staged_wins(n);
            if (s != in) {
                std::size_t a = prev, b = n; // state(a) == in, state(b) != in
                while (b - a > 1) {
                    const std::size_t mid = a + (b - a) / 2;
                    if (staged_wins(mid) == in) a = mid;
                    else b = mid;
                }
                if (in) x.staged_ranges.push_back({start, b});
                else start = b;
                in = s;
                if (x.staged_ranges.size() >= 16) break;
            }
            prev = n;
            if (g >= top) break;
        }
        if (in && x.staged_ranges.size() < 16) x.staged_ranges.push_back({start, kNever});
    }
    return m;
}

CostModel CostModel::restore(PathFit direct, PathFit staged, Crossover crossover,
                             std::vector<MeasuredPoint> table) {
    CostModel m;
    m.direct_ = std::move(direct);
    m.staged_ = std::move(staged);
    m.crossover_ = std::move(crossover);
    std::stable_sort(table.begin(), table.end(),
                     [](const MeasuredPoint &a, const MeasuredPoint &b) { return a.bytes < b.bytes; });
    m.table_ = std::move(table);
    return m;
}

CostModel CostModel::fixed(std::size_t threshold) {
    CostModel m;
    m.crossover_.threshold = threshold;
    m.crossover_.kind = threshold == kNever ? CrossoverKind::direct_always
                        : threshold == 0    ? CrossoverKind::staged_always
                                            : CrossoverKind::single;
    return m;
}

double CostModel::predict(Path p, std::size_t bytes) const noexcept { return fit_of(p).predict(bytes); }

std::optional<double> CostModel::measured(Path p, std::size_t bytes) const noexcept {
    auto it = std::lower_bound(table_.begin(), table_.end(), bytes,
                               [](const MeasuredPoint &a, std::size_t b) { return a.bytes < b; });
    if (it == table_.end() || it->bytes != bytes) return std::nullopt;
    return it->time(p);
}

} // namespace gdrpipe::model
