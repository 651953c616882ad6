// Command line of gdrpipe-calibrate.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gdrpipe::calibrate_tool {

struct CliOptions {
    int dev_a = 0;
    int dev_b = 1;
    bool to_host = false;   // -b host
    bool from_host = false; // -a host
    std::size_t max_bytes = std::size_t{64} << 20;
    double budget_s = 2.0;
    std::string cache_dir; // "" = CalibCache::default_dir()
    bool force = false;
    bool no_cache = false;
    std::string svg = "gdrpipe-crossover.svg";
    bool quiet = false;
    bool help = false;
    // --show FILE...: print what these cache files hold and the rule the
    // plugin takes from each; measures nothing
    std::vector<std::string> show;
};

extern const char *const kUsage;

// "4096", "64K", "16M", "16MiB", "1G" (binary multiples); nullopt if invalid or 0.
std::optional<std::size_t> parse_size(const std::string &s);

// nullopt with *err set on a usage error.
std::optional<CliOptions> parse_cli(int argc, char **argv, std::string *err);

} // namespace gdrpipe::calibrate_tool
