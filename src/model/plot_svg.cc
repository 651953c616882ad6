#include "gdrpipe/model/plot_svg.hpp"

#include "gdrpipe/log.hpp"
#include "gdrpipe/model/report.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace gdrpipe::model {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const char *const kColor[2] = {"#1f77b4", "#d62728"}; // direct, staged

std::string xml_escape(const std::string &s) {
    std::string o;
    for (char c : s) {
        switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        default: o += c;
        }
    }
    return o;
}

std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof(b), "%.2f", v);
    return b;
}

// decimal units, as bandwidths are usually quoted: "100 kB/s", "10 GB/s"
std::string format_rate(double v) {
    static const char *const units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
    int u = 0;
    while (v >= 1000.0 * (1 - 1e-9) && u < 4) {
        v /= 1000.0;
        ++u;
    }
    char b[32];
    std::snprintf(b, sizeof(b), "%g %s", v, units[u]);
    return b;
}

struct Frame {
    double x0, x1, y0, y1; // plot area in pixels
    double lx0, lx1;       // log2 of the size range
    double ly0, ly1;       // log10 of the value range
    double px(double bytes) const { return x0 + (std::log2(bytes) - lx0) / (lx1 - lx0) * (x1 - x0); }
    double py(double v) const { return y1 - (std::log10(v) - ly0) / (ly1 - ly0) * (y1 - y0); }
};

} // namespace

std::string render_svg(const CalibRecord &rec, const PlotOptions &opt) {
    const CostModel &m = rec.model;
    const bool bw = opt.y == PlotAxis::bandwidth;
    const auto value = [bw](double t, std::size_t n) { return bw ? static_cast<double>(n) / t : t; };

    std::size_t nmin = kNever, nmax = 0;
    for (const MeasuredPoint &p : m.table()) {
        nmin = std::min(nmin, p.bytes);
        nmax = std::max(nmax, p.bytes);
    }
    if (nmax == 0) {
        nmin = 1;
        nmax = std::size_t{64} << 20;
    }
    nmin = std::max<std::size_t>(nmin, 1);
    // x: from a power of 16 to the largest size
    const double lx0 = std::floor(std::log2(static_cast<double>(nmin)) / 4.0) * 4.0;
    double lx1 = std::log2(static_cast<double>(nmax));
    if (lx1 < lx0 + 4.0) lx1 = lx0 + 4.0;

    // fitted curves, sampled in log space
    std::vector<std::vector<std::pair<double, double>>> fitted(2);
    double vmin = kInf, vmax = 0;
    const int samples = 120;
    for (int pi = 0; pi < 2; ++pi) {
        const Path p = pi == 0 ? Path::direct : Path::staged;
        if (!m.fit_of(p).available) continue;
        for (int i = 0; i <= samples; ++i) {
            const double n = std::exp2(lx0 + (lx1 - lx0) * i / samples);
            const auto nz = static_cast<std::size_t>(std::max(1.0, std::round(n)));
            const double t = m.predict(p, nz);
            if (!(t > 0) || !std::isfinite(t)) continue;
            const double v = value(t, nz);
            fitted[static_cast<std::size_t>(pi)].emplace_back(static_cast<double>(nz), v);
        }
    }
    for (const MeasuredPoint &p : m.table()) {
        for (const std::optional<double> &t : {p.direct_s, p.staged_s}) {
            if (t && *t > 0) {
                vmin = std::min(vmin, value(*t, p.bytes));
                vmax = std::max(vmax, value(*t, p.bytes));
            }
        }
    }
    // the fitted curves only widen the range where there are no points
    if (!(vmax > 0)) {
        for (const auto &curve : fitted) {
            for (const auto &[n, v] : curve) {
                vmin = std::min(vmin, v);
                vmax = std::max(vmax, v);
            }
        }
    }
    if (!(vmax > 0)) {
        vmin = bw ? 1e6 : 1e-6;
        vmax = bw ? 1e11 : 1e-2;
    }
    double ly0 = std::floor(std::log10(vmin)), ly1 = std::ceil(std::log10(vmax));
    if (ly1 <= ly0) ly1 = ly0 + 1;

    std::vector<double> xticks;
    for (double lx = lx0; lx <= lx1 + 1e-9; lx += 4.0) xticks.push_back(lx);
    if (lx1 - xticks.back() >= 2.0) xticks.push_back(lx1); // label the end unless crowded

    const double W = std::max(opt.width, 320), H = std::max(opt.height, 240);
    const Frame f{90.0, W - 40.0, 50.0, H - 70.0, lx0, lx1, ly0, ly1};
    std::string s;
    s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
         "\" viewBox=\"0 0 " + num(W) + " " + num(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    s += "<title>" + xml_escape(opt.title) + "</title>\n";
    s += "<rect x=\"0\" y=\"0\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" fill=\"white\"/>\n";
    s += "<text x=\"" + num(W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + xml_escape(opt.title) +
         "</text>\n";
    // clip everything drawn from data to the plot area
    s += "<defs><clipPath id=\"plot-area\"><rect x=\"" + num(f.x0) + "\" y=\"" + num(f.y0) + "\" width=\"" +
         num(f.x1 - f.x0) + "\" height=\"" + num(f.y1 - f.y0) + "\"/></clipPath></defs>\n";

    // grid and ticks
    s += "<g id=\"grid\" stroke=\"#dddddd\" stroke-width=\"1\">\n";
    for (double lx : xticks) {
        const double x = f.x0 + (lx - lx0) / (lx1 - lx0) * (f.x1 - f.x0);
        s += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.y0) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.y1) + "\"/>\n";
    }
    for (double ly = ly0; ly <= ly1 + 1e-9; ly += 1.0) {
        const double y = f.py(std::pow(10.0, ly));
        s += "<line x1=\"" + num(f.x0) + "\" y1=\"" + num(y) + "\" x2=\"" + num(f.x1) + "\" y2=\"" + num(y) + "\"/>\n";
    }
    s += "</g>\n";
    s += "<g id=\"axes\" stroke=\"black\" stroke-width=\"1.5\" fill=\"none\">\n";
    s += "<line x1=\"" + num(f.x0) + "\" y1=\"" + num(f.y1) + "\" x2=\"" + num(f.x1) + "\" y2=\"" + num(f.y1) + "\"/>\n";
    s += "<line x1=\"" + num(f.x0) + "\" y1=\"" + num(f.y0) + "\" x2=\"" + num(f.x0) + "\" y2=\"" + num(f.y1) + "\"/>\n";
    s += "</g>\n";
    s += "<g id=\"tick-labels\" fill=\"black\">\n";
    for (double lx : xticks) {
        const double x = f.x0 + (lx - lx0) / (lx1 - lx0) * (f.x1 - f.x0);
        const auto n = static_cast<std::size_t>(std::llround(std::exp2(lx)));
        s += "<text x=\"" + num(x) + "\" y=\"" + num(f.y1 + 18) + "\" text-anchor=\"middle\">" +
             xml_escape(format_bytes(n)) + "</text>\n";
    }
    for (double ly = ly0; ly <= ly1 + 1e-9; ly += 1.0) {
        const double v = std::pow(10.0, ly);
        s += "<text x=\"" + num(f.x0 - 6) + "\" y=\"" + num(f.py(v) + 4) + "\" text-anchor=\"end\">" +
             xml_escape(bw ? format_rate(v) : format_seconds(v)) + "</text>\n";
    }
    s += "</g>\n";
    s += "<text id=\"x-label\" x=\"" + num((f.x0 + f.x1) / 2) + "\" y=\"" + num(H - 22) +
         "\" text-anchor=\"middle\">message size (bytes, log scale)</text>\n";
    s += "<text id=\"y-label\" transform=\"translate(18 " + num((f.y0 + f.y1) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" +
         std::string(bw ? "bandwidth (log scale)" : "time per transfer (log scale)") + "</text>\n";

    // data
    s += "<g clip-path=\"url(#plot-area)\">\n";
    for (int pi = 0; pi < 2; ++pi) {
        const Path p = pi == 0 ? Path::direct : Path::staged;
        const auto &curve = fitted[static_cast<std::size_t>(pi)];
        if (curve.size() >= 2) {
            s += std::string("<polyline class=\"fit\" id=\"fit-") + path_name(p) + "\" fill=\"none\" stroke=\"" +
                 kColor[pi] + "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\" points=\"";
            for (const auto &[n, v] : curve) s += num(f.px(n)) + "," + num(f.py(v)) + " ";
            s += "\"/>\n";
        }
        std::string pts;
        std::string dots;
        for (const MeasuredPoint &mp : m.table()) {
            const std::optional<double> t = mp.time(p);
            if (!t || !(*t > 0)) continue;
            const double x = f.px(static_cast<double>(mp.bytes)), y = f.py(value(*t, mp.bytes));
            pts += num(x) + "," + num(y) + " ";
            dots += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"3\"/>\n";
        }
        if (!pts.empty()) {
            s += std::string("<polyline class=\"measured\" id=\"measured-") + path_name(p) +
                 "\" fill=\"none\" stroke=\"" + kColor[pi] + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
            s += std::string("<g fill=\"") + kColor[pi] + "\">\n" + dots + "</g>\n";
        }
    }
    s += "</g>\n";

    // crossover
    const Crossover &x = m.crossover();
    const double lt = x.threshold > 0 && x.threshold != kNever ? std::log2(static_cast<double>(x.threshold)) : -1;
    if (lt >= lx0 && lt <= lx1) {
        const double px = f.px(static_cast<double>(x.threshold));
        s += "<line id=\"crossover\" class=\"crossover\" x1=\"" + num(px) + "\" y1=\"" + num(f.y0) + "\" x2=\"" +
             num(px) + "\" y2=\"" + num(f.y1) + "\" stroke=\"#2ca02c\" stroke-width=\"2\"/>\n";
        const bool right = px < (f.x0 + f.x1) / 2;
        s += "<text id=\"crossover-label\" x=\"" + num(right ? px + 6 : px - 6) + "\" y=\"" + num(f.y0 + 16) +
             "\" text-anchor=\"" + (right ? "start" : "end") + "\" fill=\"#2ca02c\">crossover " +
             xml_escape(format_bytes(x.threshold)) +
             (x.below == Path::staged ? " (staged below, direct from)" : "") + "</text>\n";
    } else {
        const std::string note = x.threshold == kNever ? "no crossover: direct at every size"
                                 : x.threshold == 0   ? "no crossover: staged at every size"
                                                      : "crossover " + format_bytes(x.threshold) + " (off the plot)";
        s += "<text id=\"crossover-note\" x=\"" + num(f.x0 + 10) + "\" y=\"" + num(f.y0 + 16) +
             "\" fill=\"#2ca02c\">" + xml_escape(note) + "</text>\n";
    }

    // legend
    const double lx = f.x1 - 190, ly = bw ? f.y1 - 86 : f.y0 + 8;
    s += "<g id=\"legend\">\n";
    s += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly) + "\" width=\"182\" height=\"78\" fill=\"white\" "
         "stroke=\"#999999\"/>\n";
    const char *const labels[4] = {"direct (measured)", "direct (fit)", "staged (measured)", "staged (fit)"};
    for (int i = 0; i < 4; ++i) {
        const double y = ly + 14 + 16 * i;
        s += "<line x1=\"" + num(lx + 8) + "\" y1=\"" + num(y) + "\" x2=\"" + num(lx + 38) + "\" y2=\"" + num(y) +
             "\" stroke=\"" + kColor[i / 2] + "\" stroke-width=\"2\"" +
             (i % 2 == 1 ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
        s += "<text x=\"" + num(lx + 46) + "\" y=\"" + num(y + 4) + "\">" + labels[i] + "</text>\n";
    }
    s += "</g>\n";
    s += "</svg>\n";
    return s;
}

bool write_svg(const std::string &path, const CalibRecord &rec, const PlotOptions &opt) {
    const std::string svg = render_svg(rec, opt);
    std::FILE *fp = std::fopen(path.c_str(), "w");
    if (fp == nullptr) {
        GP_WARN("cannot write plot %s: %s", path.c_str(), std::strerror(errno));
        return false;
    }
    const bool ok = std::fwrite(svg.data(), 1, svg.size(), fp) == svg.size();
    const bool closed = std::fclose(fp) == 0;
    if (!ok || !closed) {
        GP_WARN("writing plot %s failed", path.c_str());
        return false;
    }
    return true;
}

} // namespace gdrpipe::model
