// Robust location estimate of repeated timings: median after dropping the
// samples more than `mads` scaled median-absolute-deviations from the median.
#pragma once
#include <vector>

namespace gdrpipe::model {

struct RobustEstimate {
    double value = 0.0; // median of the kept samples
    int kept = 0;
    int rejected = 0;
};

// Median of a non-empty set (mean of the two middle values for even sizes).
double median(std::vector<double> v);

// MAD is scaled by 1.4826 (consistent with a normal sigma). When the MAD is
// zero nothing is rejected. `samples` must not be empty.
RobustEstimate robust_median(const std::vector<double> &samples, double mads = 3.0);

} // namespace gdrpipe::model
