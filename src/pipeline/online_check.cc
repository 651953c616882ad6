#include "gdrpipe/pipeline/online_check.hpp"

#include "gdrpipe/model/robust_stats.hpp"

#include <algorithm>
#include <cmath>

namespace gdrpipe::pipeline {
namespace {

double median_offset(const model::PathFit &f, const std::vector<OnlineSample> &v) {
    std::vector<double> d;
    for (const OnlineSample &s : v) {
        const double p = f.predict(s.bytes);
        if (std::isfinite(p)) d.push_back(s.seconds - p);
    }
    return d.empty() ? 0.0 : model::median(d);
}

} // namespace

CorrectedRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged,
                             const std::vector<OnlineSample> &direct_samples,
                             const std::vector<OnlineSample> &staged_samples, std::size_t max_bytes) {
    return corrected_rule(direct, staged, median_offset(direct, direct_samples),
                          median_offset(staged, staged_samples), max_bytes);
}

CorrectedRule corrected_rule(const model::PathFit &direct, const model::PathFit &staged, double delta_direct_s,
                             double delta_staged_s, std::size_t max_bytes) {
    CorrectedRule r;
    r.delta_direct_s = delta_direct_s;
    r.delta_staged_s = delta_staged_s;
    // > 0: staged cheaper at n
    auto gain = [&](std::size_t n) {
        return (direct.predict(n) + r.delta_direct_s) - (staged.predict(n) + r.delta_staged_s);
    };
    if (!direct.available || !staged.available) {
        r.thresh = direct.available ? model::kNever : 0;
        return r;
    }
    const bool staged_small = gain(1) > 0;
    std::size_t prev = 1;
    const double top = static_cast<double>(std::max<std::size_t>(max_bytes, 2));
    for (double g = 1.0; g < top;) {
        g = std::min(g * std::pow(2.0, 0.125), top);
        const auto n = static_cast<std::size_t>(g);
        if (n <= prev) continue;
        if ((gain(n) > 0) != staged_small) {
            std::size_t a = prev, b = n; // side(a) == staged_small != side(b)
            while (b - a > 1) {
                const std::size_t mid = a + (b - a) / 2;
                if ((gain(mid) > 0) == staged_small) a = mid;
                else b = mid;
            }
            r.thresh = b;
            r.below = staged_small ? model::Path::staged : model::Path::direct;
            return r;
        }
        prev = n;
    }
    // no crossing in range: one path everywhere
    r.below = model::Path::direct;
    r.thresh = staged_small ? 0 : model::kNever;
    return r;
}

OnlineCheck::OnlineCheck(unsigned per_path, std::size_t thresh) noexcept : per_path_(per_path) {
    if (per_path == 0 || thresh == 0 || thresh == model::kNever) return;
    lo_ = std::max(thresh / kBand, kMinBytes);
    hi_ = thresh > model::kNever / kBand ? model::kNever : thresh * kBand;
    active_ = lo_ <= hi_;
}

std::optional<model::Path> OnlineCheck::pick(std::size_t bytes, bool idle) const noexcept {
    if (!active_ || !idle || bytes < lo_ || bytes > hi_) return std::nullopt;
    // the path with fewer samples; direct first
    return staged_.size() < direct_.size() ? model::Path::staged : model::Path::direct;
}

bool OnlineCheck::record(model::Path p, std::size_t bytes, double seconds) {
    if (!active_) return false;
    std::vector<OnlineSample> &v = p == model::Path::direct ? direct_ : staged_;
    if (v.size() < per_path_) v.push_back({bytes, seconds});
    if (direct_.size() >= per_path_ && staged_.size() >= per_path_) {
        active_ = false;
        return true;
    }
    return false;
}

} // namespace gdrpipe::pipeline
