#include "cli_options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace gdrpipe::calibrate_tool {

const char *const kUsage =
    "usage: gdrpipe-calibrate [-a DEV|host] [-b DEV|host] [--max SIZE] [--budget SECONDS]\n"
    "                         [--cache-dir DIR] [--force] [--no-cache] [--svg FILE] [-q]\n"
    "       gdrpipe-calibrate --show CACHEFILE...\n"
    "Measures the direct (peer copy) and the host-staged path between two GPUs of this\n"
    "machine (or GPU -> host memory with -b host, host memory -> GPU with -a host) and\n"
    "prints where one overtakes the other.\n"
    "  -a DEV|host       source device (default 0), or pageable host memory\n"
    "  -b DEV|host       destination device (default 1), or pageable host memory\n"
    "  --max SIZE        largest message size probed (default 64M; K/M/G are binary)\n"
    "  --budget SECONDS  time allowed for the measurements (default 2)\n"
    "  --cache-dir DIR   calibration cache (default $XDG_CACHE_HOME/gdrpipe or ~/.cache/gdrpipe)\n"
    "  --force           measure again even if the cache has a valid entry\n"
    "  --no-cache        neither read nor write the cache\n"
    "  --svg FILE        plot file (default gdrpipe-crossover.svg)\n"
    "  -q                no progress line\n"
    "  --show FILE...    print what these cache files (crossover-*.txt) hold and the\n"
    "                    rule the plugin takes from each; measures nothing\n"
    "exit status: 0 ok, 1 calibration failed (nothing cached), 2 usage error\n";

std::optional<std::size_t> parse_size(const std::string &s) {
    if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
    errno = 0;
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno != 0) return std::nullopt;
    std::string suf(end);
    unsigned shift = 0;
    if (!suf.empty()) {
        const char u = suf[0];
        shift = (u == 'k' || u == 'K') ? 10 : (u == 'm' || u == 'M') ? 20 : (u == 'g' || u == 'G') ? 30 : 0;
        const std::string rest = shift != 0 ? suf.substr(1) : suf;
        if (!(rest.empty() || rest == "B" || rest == "iB" || (shift == 0 && rest == "b"))) return std::nullopt;
        if (shift == 0 && rest.empty()) return std::nullopt;
    }
    if (v == 0 || v > (std::numeric_limits<std::size_t>::max() >> shift)) return std::nullopt;
    return static_cast<std::size_t>(v) << shift;
}

namespace {

std::optional<int> parse_device(const std::string &s) {
    if (s.empty() || s.size() > 4) return std::nullopt;
    for (char c : s)
        if (c < '0' || c > '9') return std::nullopt;
    return std::atoi(s.c_str());
}

} // namespace

std::optional<CliOptions> parse_cli(int argc, char **argv, std::string *err) {
    CliOptions o;
    auto bad = [&](const std::string &m) -> std::optional<CliOptions> {
        *err = m;
        return std::nullopt;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        std::string val;
        const bool takes = arg == "-a" || arg == "-b" || arg == "--max" || arg == "--budget" ||
                           arg == "--cache-dir" || arg == "--svg";
        if (takes) {
            if (i + 1 >= argc) return bad(arg + " needs a value");
            val = argv[++i];
        }
        if (arg == "-h" || arg == "--help") {
            o.help = true;
        } else if (arg == "--show") {
            o.show.assign(argv + i + 1, argv + argc);
            if (o.show.empty()) return bad("--show needs at least one cache file");
            return o;
        } else if (arg == "-a") {
            if (val == "host") {
                o.from_host = true;
            } else {
                auto d = parse_device(val);
                if (!d) return bad("-a: not a device number or 'host': " + val);
                o.dev_a = *d;
                o.from_host = false;
            }
        } else if (arg == "-b") {
            if (val == "host") {
                o.to_host = true;
            } else {
                auto d = parse_device(val);
                if (!d) return bad("-b: not a device number or 'host': " + val);
                o.dev_b = *d;
                o.to_host = false;
            }
        } else if (arg == "--max") {
            auto n = parse_size(val);
            if (!n) return bad("--max: not a size: " + val);
            o.max_bytes = *n;
        } else if (arg == "--budget") {
            char *end = nullptr;
            const double b = std::strtod(val.c_str(), &end);
            if (end == val.c_str() || *end != '\0' || !std::isfinite(b) || b <= 0.0)
                return bad("--budget: not a positive number of seconds: " + val);
            o.budget_s = b;
        } else if (arg == "--cache-dir") {
            if (val.empty()) return bad("--cache-dir: empty directory");
            o.cache_dir = val;
        } else if (arg == "--svg") {
            if (val.empty()) return bad("--svg: empty file name");
            o.svg = val;
        } else if (arg == "--force") {
            o.force = true;
        } else if (arg == "--no-cache") {
            o.no_cache = true;
        } else if (arg == "-q" || arg == "--quiet") {
            o.quiet = true;
        } else {
            return bad("unknown argument: " + arg);
        }
    }
    if (o.to_host && o.from_host) return bad("-a host and -b host: one side must be a device");
    if (!o.to_host && !o.from_host && o.dev_a == o.dev_b) return bad("-a and -b name the same device");
    return o;
}

} // namespace gdrpipe::calibrate_tool
