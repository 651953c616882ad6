// gdrpipe-calibrate: measures the direct/staged crossover between two GPUs of
// this machine (or a GPU and host memory), caches it and plots it.
#include "cli_options.hpp"

#include "gdrpipe/cuda/context.hpp"
#include "gdrpipe/cuda/driver.hpp"
#include "gdrpipe/model/calib_cache.hpp"
#include "gdrpipe/model/obtain.hpp"
#include "gdrpipe/model/plot_svg.hpp"
#include "gdrpipe/model/report.hpp"
#include "gdrpipe/pipeline/crossover.hpp"
#include "gdrpipe/pipeline/cuda_prober.hpp"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#ifndef GP_VERSION
#define GP_VERSION "unknown"
#endif

namespace gm = gdrpipe::model;
namespace gc = gdrpipe::cuda;
using namespace gdrpipe::calibrate_tool;
using gdrpipe::pipeline::CudaProber;
using gdrpipe::pipeline::ProberConfig;

namespace {

std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigint(int) { g_cancel.store(true); }

// Updating progress line on stderr once the calibration runs over a second.
class ProgressLine {
public:
    explicit ProgressLine(bool enabled) : enabled_(enabled) {}
    void update(const gm::CalibProgress &p) {
        if (!enabled_ || p.elapsed_s < 1.0 || p.elapsed_s - last_ < 0.1) return;
        last_ = p.elapsed_s;
        std::fprintf(stderr, "\r  calibrating: %-6s probe %zu/~%zu, %s at %s, %.1f s of %.1f s   ",
                     gm::phase_name(p.phase), p.probes_done, p.probes_planned, gm::path_name(p.path),
                     gm::format_bytes(p.bytes).c_str(), p.elapsed_s, p.budget_s);
        std::fflush(stderr);
        shown_ = true;
    }
    void finish() {
        if (shown_) std::fprintf(stderr, "\r%*s\r", 100, "");
        shown_ = false;
    }

private:
    bool enabled_;
    bool shown_ = false;
    double last_ = 0.0;
};

int run(const CliOptions &o) {
    gc::Driver &drv = gc::driver();
    if (!drv.available()) {
        std::fprintf(stderr, "gdrpipe-calibrate: CUDA is not available: %s\n", drv.why_not().c_str());
        return 1;
    }
    std::string err;
    ProberConfig pc;
    pc.dev_a = o.dev_a;
    pc.dev_b = o.dev_b;
    pc.to_host = o.to_host;
    pc.from_host = o.from_host;
    pc.capacity = o.max_bytes;
    std::unique_ptr<CudaProber> prober = CudaProber::create(pc, &err);
    if (!prober) {
        std::fprintf(stderr, "gdrpipe-calibrate: %s\n", err.c_str());
        return 1;
    }

    gc::DeviceManager &dm = gc::devices();
    const gc::DeviceProps *pa = o.from_host ? nullptr : dm.props(o.dev_a);
    const gc::DeviceProps *pb = o.to_host ? nullptr : dm.props(o.dev_b);
    // the plugin's key too: this run fills the cache the plugin reads
    const gm::CalibKey key = gdrpipe::pipeline::device_pair_key(
        o.from_host ? -1 : o.dev_a, o.to_host ? -1 : o.dev_b, prober->peer_access());
    auto side = [](int dev, const gc::DeviceProps *p) {
        return p != nullptr ? "device " + std::to_string(dev) + " (" + p->name + ", " + p->pci_bus_id + ")"
                            : std::string("host memory");
    };
    std::printf("gdrpipe-calibrate %s: %s -> %s, peer access: %s\n", GP_VERSION, side(o.dev_a, pa).c_str(),
                side(o.dev_b, pb).c_str(),
                (o.to_host || o.from_host) ? "n/a" : prober->peer_access() ? "yes" : "no");
    std::fflush(stdout);

    std::optional<gm::CalibCache> cache;
    if (!o.no_cache) {
        cache.emplace(o.cache_dir);
        if (cache->dir().empty()) {
            std::fprintf(stderr, "gdrpipe-calibrate: no cache directory (HOME and XDG_CACHE_HOME unset; "
                                 "use --cache-dir): not caching\n");
            cache.reset();
        }
    }

    gm::CalibOptions co;
    co.max_bytes = o.max_bytes;
    co.min_bytes = 1;
    co.budget_s = o.budget_s;
    co.clock = [] { return gdrpipe::cuda::driver().timing_now(); };  // the probes' clock
    co.cancel = &g_cancel;
    ProgressLine line(!o.quiet && isatty(STDERR_FILENO));
    co.progress = [&line](const gm::CalibProgress &p) { line.update(p); };

    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    struct sigaction old_sa = {};
    sigaction(SIGINT, &sa, &old_sa);
    gm::Obtained got = gm::obtain_calibration(key, *prober, co, cache ? &*cache : nullptr, o.force);
    sigaction(SIGINT, &old_sa, nullptr);
    line.finish();

    if (got.status != gm::CalibStatus::ok) {
        std::fprintf(stderr, "gdrpipe-calibrate: calibration failed (%s): %s%s%s; nothing cached\n",
                     gm::calib_status_name(got.status), got.message.c_str(),
                     prober->first_error().empty() ? "" : "; first CUDA error: ",
                     prober->first_error().c_str());
        return 1;
    }
    std::fputs(gm::format_report(got.record, got.source).c_str(), stdout);
    if (!prober->first_error().empty())
        std::printf("note: a probe failed: %s\n", prober->first_error().c_str());
    if (!cache) {
        std::printf("cache: not used\n");
    } else if (got.source == gm::Source::cache) {
        std::printf("cache: read from %s (--force measures again)\n", cache->path_for(key).c_str());
    } else if (got.stored) {
        std::printf("cache: stored in %s\n", cache->path_for(key).c_str());
    } else {
        std::printf("cache: could not write %s\n", cache->path_for(key).c_str());
    }
    if (gm::write_svg(o.svg, got.record)) std::printf("plot: %s\n", o.svg.c_str());
    else std::printf("plot: could not write %s\n", o.svg.c_str());
    return 0;
}

// --show: what each cache file holds and the rule the plugin takes from it
int show(const CliOptions &o) {
    int rc = 0;
    for (const std::string &path : o.show) {
        std::ifstream in(path, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        const std::optional<gm::CalibKey> key = in ? gm::read_record_key(text.str()) : std::nullopt;
        std::string why = !in ? "cannot read it" : "not a gdrpipe crossover cache file";
        std::optional<gm::CalibRecord> rec;
        if (key) rec = gm::parse_record(text.str(), *key, &why);
        if (!rec) {
            std::fprintf(stderr, "gdrpipe-calibrate: %s: %s\n", path.c_str(), why.c_str());
            rc = 1;
            continue;
        }
        std::printf("== %s\n%s -> %s (%s, %s), driver %s, gdrpipe %s\n", path.c_str(), key->local_gpu_uuid.c_str(),
                    key->remote_gpu_uuid.c_str(), key->peer_relation.c_str(), key->wire_kind.c_str(),
                    key->driver_version.c_str(), key->gdrpipe_version.c_str());
        std::fputs(gm::format_report(*rec, gm::Source::cache).c_str(), stdout);
        if (rec->online.empty()) std::printf("checked through a peer: not yet\n");
        else
            std::printf("checked through a peer in %zu size classes: %s\n", rec->online.size(),
                        gdrpipe::pipeline::describe_classes(rec->online).c_str());
        std::printf("rule the plugin uses (up to %zu bytes): %s\n", o.max_bytes,
                    gdrpipe::pipeline::rule_of_record(*rec, o.max_bytes).describe().c_str());
    }
    return rc;
}

} // namespace

int main(int argc, char **argv) {
    std::string err;
    std::optional<CliOptions> o = parse_cli(argc, argv, &err);
    if (!o) {
        std::fprintf(stderr, "gdrpipe-calibrate: %s\n%s", err.c_str(), kUsage);
        return 2;
    }
    if (o->help) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (!o->show.empty()) return show(*o);
    return run(*o);
}
