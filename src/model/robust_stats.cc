#include "gdrpipe/model/robust_stats.hpp"

#include <algorithm>
#include <cmath>

namespace gdrpipe::model {

double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    const std::size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const double hi = v[mid];
    if (v.size() % 2 == 1) return hi;
    const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return 0.5 * (lo + hi);
}

RobustEstimate robust_median(const std::vector<double> &samples, double mads) {
    RobustEstimate r;
    if (samples.empty()) return r;
    const double med = median(samples);
    std::vector<double> dev;
    dev.reserve(samples.size());
    for (double s : samples) dev.push_back(std::fabs(s - med));
    const double mad = 1.4826 * median(dev);
    if (!(mad > 0.0) || samples.size() < 3) {
        r.value = med;
        r.kept = static_cast<int>(samples.size());
        return r;
    }
    std::vector<double> kept;
    for (double s : samples) {
        if (std::fabs(s - med) <= mads * mad) kept.push_back(s);
    }
    r.kept = static_cast<int>(kept.size());
    r.rejected = static_cast<int>(samples.size() - kept.size());
    r.value = kept.empty() ? med : median(kept);
    return r;
}

} // namespace gdrpipe::model
