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

namespace {

// the weighted median of (value, weight) pairs (weights > 0)
double weighted_median(std::vector<std::pair<double, double>> v) {
    std::sort(v.begin(), v.end());
    double total = 0.0;
    for (const auto &p : v) total += p.second;
    double run = 0.0;
    for (const auto &p : v) {
        run += p.second;
        if (run >= total / 2) return p.first;
    }
    return v.back().first;
}

} // namespace

OffsetTrend fit_offsets(const std::vector<model::OnlineClass> &classes, model::Path p) {
    OffsetTrend t;
    if (classes.empty()) return t;
    std::vector<double> x, y;
    for (const model::OnlineClass &c : classes) {
        x.push_back(static_cast<double>(c.bytes));
        y.push_back(p == model::Path::direct ? c.direct_s : c.staged_s);
    }
    t.lo_bytes = *std::min_element(x.begin(), x.end());
    t.hi_bytes = *std::max_element(x.begin(), x.end());
    // Theil-Sen with each pair's slope weighted by how far apart its sizes
    // are (two neighbouring small classes say little about a per-byte cost),
    // then the median intercept
    std::vector<std::pair<double, double>> slopes;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j)
            if (x[j] != x[i]) slopes.emplace_back((y[j] - y[i]) / (x[j] - x[i]), std::fabs(x[j] - x[i]));
    t.per_byte_s = slopes.empty() ? 0.0 : weighted_median(slopes);
    std::vector<double> at;
    for (std::size_t i = 0; i < x.size(); ++i) at.push_back(y[i] - t.per_byte_s * x[i]);
    t.fixed_s = model::median(at);
    return t;
}

double OffsetTrend::at(std::size_t bytes) const noexcept {
    const double n = std::clamp(static_cast<double>(bytes), lo_bytes, hi_bytes);
    return fixed_s + per_byte_s * n;
}

double class_offset(const std::vector<model::OnlineClass> &classes, model::Path p, std::size_t bytes) {
    return fit_offsets(classes, p).at(bytes);
}

SizeRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged,
                        const std::vector<model::OnlineClass> &classes, std::size_t max_bytes) {
    SizeRule r;
    if (!direct.available || !staged.available) {
        r.first = direct.available ? model::Path::direct : model::Path::staged;
        return r;
    }
    const OffsetTrend od = fit_offsets(classes, model::Path::direct), os = fit_offsets(classes, model::Path::staged);
    auto staged_wins = [&](std::size_t n) { return direct.predict(n) + od.at(n) > staged.predict(n) + os.at(n); };
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
    return r;
}

int OnlineCheck::size_class(std::size_t bytes) noexcept {
    return bytes == 0 ? 0 : static_cast<int>(std::bit_width(bytes)) - 1;
}

OnlineCheck::OnlineCheck(unsigned per_path, const model::PathFit &direct, const model::PathFit &staged,
                         std::size_t thresh, std::vector<model::OnlineClass> known)
    : per_path_(per_path), direct_(direct), staged_(staged), classes_(std::move(known)) {
    std::sort(classes_.begin(), classes_.end(),
              [](const model::OnlineClass &a, const model::OnlineClass &b) { return a.bytes < b.bytes; });
    if (per_path == 0 || thresh == 0 || thresh == model::kNever || !direct.available || !staged.available) return;
    const std::size_t hi = thresh > model::kNever / kBand ? model::kNever : thresh * kBand;
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
    // the path with fewer samples in the class; direct first
    auto it = pending_.find(cls);
    if (it == pending_.end()) return model::Path::direct;
    return it->second.staged.size() < it->second.direct.size() ? model::Path::staged : model::Path::direct;
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
