// Human-readable text of a calibration: the measured table with the chosen
// path and its margin, the fitted parameters, the crossover and its origin.
// Used by the CLI and by the plugin's info log.
#pragma once
#include "gdrpipe/model/calib_record.hpp"

#include <string>

namespace gdrpipe::model {

// "1 B", "4 KiB", "36.3 KiB", "64 MiB"; kNever -> "never"
std::string format_bytes(std::size_t n);
// "850 ns", "6.00 us", "1.34 ms", "2.10 s"; +inf -> "n/a"
std::string format_seconds(double s);
// "t = 6.00 us + n / 3.00 GB/s" (+ " + 3.00 us * ceil(n / 2 MiB)" when chunked)
std::string format_fit(const PathFit &f);
// e.g. "36.3 KiB (direct below, staged from there on)"
std::string format_threshold(const Crossover &x);

// Multi-line report (ends with '\n').
std::string format_report(const CalibRecord &rec, Source source);
// One line for logs: crossover, pipeline, fits, source.
std::string format_summary(const CalibRecord &rec, Source source);

} // namespace gdrpipe::model
