// Self-contained SVG plot of a calibration (no dependencies): log-log axes of
// message size against time per transfer (or bandwidth), the measured points
// of both paths, the fitted curves (dashed), and the crossover as a vertical
// line (element id "crossover") with its label. When there is no crossover
// inside the plot a note (id "crossover-note") says which path always wins.
#pragma once
#include "gdrpipe/model/calib_record.hpp"

#include <string>

namespace gdrpipe::model {

enum class PlotAxis : int { time = 0, bandwidth };

struct PlotOptions {
    PlotAxis y = PlotAxis::time;
    int width = 860;
    int height = 520;
    std::string title = "gdrpipe: direct vs host-staged";
};

std::string render_svg(const CalibRecord &rec, const PlotOptions &opt = {});
// false (with a GP_WARN) if the file cannot be written.
bool write_svg(const std::string &path, const CalibRecord &rec, const PlotOptions &opt = {});

} // namespace gdrpipe::model
