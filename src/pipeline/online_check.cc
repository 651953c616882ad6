#include "gdrpipe/pipeline/online_check.hpp"

#include "gdrpipe/model/report.hpp"
#include "gdrpipe/model/robust_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

namespace gdrpipe::pipeline {

model::Path SizeRule::path_for(std::size_t bytes) const noexcept {
    const auto flips = std::upper_bound(bounds.begin(), bounds.end(), bytes) - bounds.begin();
    return flips % 2 == 0 ? first : model::other_path(first);
}

SizeRule SizeRule::single(std::size_t thresh, model::Path below) {
    SizeRule r;
    if (thresh == model::kNever) {
        r.first = below;
    } else if (thresh == 0) {
        r.first = model::other_path(below);
    } else {
        r.first = below;
        r.bounds.push_back(thresh);
    }
    return r;
}

std::string SizeRule::describe() const {
    if (bounds.empty())
        return first == model::Path::direct ? "never (direct at every size)" : "0 (staged at every size)";
    if (bounds.size() == 1) {
        return std::to_string(bounds[0]) +
               (first == model::Path::direct ? " bytes (direct below, staged from)" : " bytes (staged below, direct from)");
    }
    std::string s = std::string(model::path_name(first)) + " below " + std::to_string(bounds[0]) + " bytes";
    model::Path p = first;
    for (std::size_t b : bounds) {
        p = model::other_path(p);
        s += std::string(", ") + model::path_name(p) + " from " + std::to_string(b);
    }
    return s;
}

std::string describe_classes(const std::vector<model::OnlineClass> &classes) {
    std::string s;
    for (const model::OnlineClass &c : classes) {
        char buf[96];
        std::snprintf(buf, sizeof(buf), ": direct %+.1f us, staged %+.1f us", c.direct_s * 1e6, c.staged_s * 1e6);
        if (!s.empty()) s += "; ";
        s += model::format_bytes(c.bytes) + buf;
    }
    return s;
}

double class_offset(const std::vector<model::OnlineClass> &classes, model::Path p, std::size_t bytes) {
    if (classes.empty()) return 0.0;
    auto off = [p](const model::OnlineClass &c) { return p == model::Path::direct ? c.direct_s : c.staged_s; };
    if (bytes <= classes.front().bytes) return off(classes.front());
    if (bytes >= classes.back().bytes) return off(classes.back());
    const auto hi = std::upper_bound(classes.begin(), classes.end(), bytes,
                                     [](std::size_t n, const model::OnlineClass &c) { return n < c.bytes; });
    const model::OnlineClass &r = *hi, &l = *(hi - 1);
    const double x0 = std::log2(double(l.bytes)), x1 = std::log2(double(r.bytes));
    const double f = x1 > x0 ? (std::log2(double(bytes)) - x0) / (x1 - x0) : 0.0;
    return off(l) + (off(r) - off(l)) * f;
}

namespace {

// The top-of-range override of corrected_rule (see there).
void apply_top(SizeRule &r, const std::vector<model::OnlineClass> &classes,
               const std::vector<model::MeasuredPoint> &table) {
    std::vector<const model::MeasuredPoint *> both;
    for (const model::MeasuredPoint &p : table)
        if (p.direct_s && p.staged_s && *p.direct_s > 0 && *p.staged_s > 0) both.push_back(&p);
    if (both.size() < 2) return;
    std::sort(both.begin(), both.end(), [](auto *a, auto *b) { return a->bytes < b->bytes; });
    const model::MeasuredPoint &top = *both.back(), &below = *both[both.size() - 2];
    const std::size_t checked_hi = classes.empty() ? 0 : classes.back().bytes;
    if (top.bytes <= checked_hi) return;
    const double d = *top.direct_s, s = *top.staged_s;
    const model::Path winner = d < s ? model::Path::direct : model::Path::staged;
    if (std::max(d, s) / std::min(d, s) - 1.0 <= kTopMargin || r.path_for(top.bytes) == winner) return;
    // where the measured curves cross between the two largest sizes (log-log)
    std::size_t from = below.bytes + 1;
    const double g0 = std::log(*below.direct_s / *below.staged_s), g1 = std::log(d / s);
    if ((g0 > 0) != (g1 > 0)) {
        const double x0 = std::log(double(below.bytes)), x1 = std::log(double(top.bytes));
        from = static_cast<std::size_t>(std::exp(x0 + (x1 - x0) * g0 / (g0 - g1)));
    }
    from = std::clamp(from, checked_hi + 1, top.bytes);
    while (!r.bounds.empty() && r.bounds.back() >= from) r.bounds.pop_back();
    if (r.path_for(from) != winner) r.bounds.push_back(from);
}

// Interior windows of one path whose corrected curve is nowhere more than
// kSwitchGain cheaper than the other's are given to the paths around them:
// where the two curves touch, the measurement cannot tell them apart, and a
// switch there only follows the noise. ratio(n) = direct / staged cost.
template <class Ratio> void drop_thin_windows(SizeRule &r, Ratio ratio) {
    for (std::size_t i = 1; i < r.bounds.size();) {
        const std::size_t lo = r.bounds[i - 1], hi = r.bounds[i];
        const model::Path p = r.path_for(lo);
        double best = 0.0; // largest relative gain of p inside [lo, hi)
        for (int k = 0; k <= 8; ++k) {
            const double x = std::log(double(lo)) + (std::log(double(hi)) - std::log(double(lo))) * k / 8.0;
            const auto n = std::clamp(static_cast<std::size_t>(std::exp(x)), lo, hi - 1);
            const double q = ratio(n);
            best = std::max(best, p == model::Path::direct ? 1.0 / q - 1.0 : q - 1.0);
        }
        if (best >= kSwitchGain) {
            ++i;
            continue;
        }
        r.bounds.erase(r.bounds.begin() + static_cast<std::ptrdiff_t>(i - 1),
                       r.bounds.begin() + static_cast<std::ptrdiff_t>(i + 1));
        if (i > 1) --i;
    }
}

// Windows below the top one that hold fewer than kLoneClasses checked
// classes, while at least kLoneClasses lie outside them, go to the paths
// around them.
void drop_lone_windows(SizeRule &r, const std::vector<model::OnlineClass> &classes) {
    const int total = static_cast<int>(classes.size());
    for (std::size_t i = 0; i < r.bounds.size();) {
        const std::size_t lo = i == 0 ? 0 : r.bounds[i - 1], hi = r.bounds[i];
        const int inside = static_cast<int>(std::count_if(classes.begin(), classes.end(), [&](const auto &c) {
            return c.bytes >= lo && c.bytes < hi;
        }));
        if (inside >= kLoneClasses || total - inside < kLoneClasses) {
            ++i;
            continue;
        }
        if (i == 0) {
            r.first = model::other_path(r.first);
            r.bounds.erase(r.bounds.begin());
        } else {
            r.bounds.erase(r.bounds.begin() + static_cast<std::ptrdiff_t>(i - 1),
                           r.bounds.begin() + static_cast<std::ptrdiff_t>(i + 1));
            --i;
        }
    }
}

} // namespace

SizeRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged,
                        const std::vector<model::OnlineClass> &classes, std::size_t max_bytes,
                        const std::vector<model::MeasuredPoint> &table) {
    SizeRule r;
    if (!direct.available || !staged.available) {
        r.first = direct.available ? model::Path::direct : model::Path::staged;
        return r;
    }
    auto cost = [&](model::Path p, std::size_t n) {
        return (p == model::Path::direct ? direct : staged).predict(n) + class_offset(classes, p, n);
    };
    auto staged_wins = [&](std::size_t n) { return cost(model::Path::direct, n) > cost(model::Path::staged, n); };
    bool side = staged_wins(1);
    r.first = side ? model::Path::staged : model::Path::direct;
    std::size_t prev = 1;
    const double top = static_cast<double>(std::max<std::size_t>(max_bytes, 2));
    for (double g = 1.0; g < top;) {
        g = std::min(g * std::pow(2.0, 0.125), top);
        const auto n = static_cast<std::size_t>(g);
        if (n <= prev) continue;
        if (staged_wins(n) != side) {
            std::size_t a = prev, b = n; // side at a, the other side at b
            while (b - a > 1) {
                const std::size_t mid = a + (b - a) / 2;
                if (staged_wins(mid) == side) a = mid;
                else b = mid;
            }
            r.bounds.push_back(b);
            side = !side;
        }
        prev = n;
    }
    drop_lone_windows(r, classes);
    drop_thin_windows(r, [&](std::size_t n) { return cost(model::Path::direct, n) / cost(model::Path::staged, n); });
    apply_top(r, classes, table);
    return r;
}

int OnlineCheck::size_class(std::size_t bytes) noexcept {
    return bytes == 0 ? 0 : static_cast<int>(std::bit_width(bytes)) - 1;
}

OnlineCheck::OnlineCheck(unsigned per_path, const model::PathFit &direct, const model::PathFit &staged,
                         std::size_t thresh, std::vector<model::OnlineClass> known,
                         std::vector<model::MeasuredPoint> table)
    : per_path_(per_path), direct_(direct), staged_(staged), classes_(std::move(known)), table_(std::move(table)) {
    std::sort(classes_.begin(), classes_.end(),
              [](const model::OnlineClass &a, const model::OnlineClass &b) { return a.bytes < b.bytes; });
    if (per_path == 0 || thresh == 0 || thresh == model::kNever || !direct.available || !staged.available) return;
    const std::size_t hi =
        thresh > model::kNever / kBand ? model::kNever : std::max(thresh * kBand, kMinTop);
    lo_ = size_class(kMinBytes);
    hi_ = size_class(hi);
    for (int c = lo_; c <= hi_; ++c)
        if (!complete(c)) ++open_;
}

bool OnlineCheck::complete(int cls) const noexcept {
    return std::any_of(classes_.begin(), classes_.end(),
                       [cls](const model::OnlineClass &c) { return size_class(c.bytes) == cls; });
}

std::optional<model::Path> OnlineCheck::pick(std::size_t bytes, bool idle) const noexcept {
    if (open_ == 0 || !idle) return std::nullopt;
    const int cls = size_class(bytes);
    if (!in_band(cls) || complete(cls)) return std::nullopt;
    // blocks of kBlock transfers per path, direct first (not alternating per
    // transfer: on the H200 machine, host -> GPU puts of 16 KiB cost ~150 us
    // on both paths while the paths alternated, 20-40 us otherwise)
    auto it = pending_.find(cls);
    if (it == pending_.end()) return model::Path::direct;
    const std::size_t nd = it->second.direct.size(), ns = it->second.staged.size();
    const model::Path want = ((nd + ns) / kBlock) % 2 == 0 ? model::Path::direct : model::Path::staged;
    if (want == model::Path::direct ? nd >= per_path_ : ns >= per_path_) return model::other_path(want);
    return want;
}

bool OnlineCheck::record(model::Path p, std::size_t bytes, double seconds) {
    const int cls = size_class(bytes);
    if (open_ == 0 || !in_band(cls) || complete(cls)) return false;
    const model::PathFit &f = p == model::Path::direct ? direct_ : staged_;
    const double predicted = f.predict(bytes);
    if (!std::isfinite(predicted) || !std::isfinite(seconds)) return false;
    Pending &pd = pending_[cls];
    std::vector<double> &v = p == model::Path::direct ? pd.direct : pd.staged;
    if (v.size() >= per_path_) return false;
    v.push_back(seconds - predicted);
    pd.sizes.push_back(static_cast<double>(bytes));
    if (pd.direct.size() < per_path_ || pd.staged.size() < per_path_) return false;
    model::OnlineClass oc;
    oc.bytes = static_cast<std::size_t>(std::llround(model::median(pd.sizes)));
    oc.samples = static_cast<int>(per_path_);
    oc.direct_s = model::median(pd.direct);
    oc.staged_s = model::median(pd.staged);
    classes_.insert(std::upper_bound(classes_.begin(), classes_.end(), oc,
                                     [](const model::OnlineClass &a, const model::OnlineClass &b) {
                                         return a.bytes < b.bytes;
                                     }),
                    oc);
    pending_.erase(cls);
    --open_;
    return true;
}

} // namespace gdrpipe::pipeline
