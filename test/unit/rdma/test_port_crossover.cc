// The per-(GPU, port) crossover of the RDMA wire (port_crossover.hpp) on the
// fake fabric: measured through the shared cache machinery, the threshold
// lies where the fabric's parameters put it (n* = L / (1/B_dev - 1/B), see
// test_prober.cc), is stored, and the next obtain (a new process: the map
// reset) reads it from the cache. A prober that cannot be made falls back to
// the configured threshold and stores nothing.
#include <gdrpipe/rdma/fake_backend.hpp>
#include <gdrpipe/rdma/port_crossover.hpp>

#include "free_copier.hpp"

#include "gp_catch.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace gdrpipe::rdma;
namespace model = gdrpipe::model;
namespace pipeline = gdrpipe::pipeline;
namespace fs = std::filesystem;

namespace {

struct Fixture {
    FakeFabric fab;
    std::unique_ptr<Backend> be;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<Registrar> reg;
    std::vector<std::vector<std::uint8_t>> bufs;
    int allocs = 0, releases = 0;
    bool fail_alloc = false;
    std::string dir;

    explicit Fixture(const FakeConfig &fc) : fab(fc), be(fab.backend()) {
        ctx = std::move(be->open(be->ports().at(0)).value());
        pd = std::move(ctx->alloc_pd().value());
        reg = std::make_unique<Registrar>(*pd, DeviceRegHooks{});
        char tmpl[] = "/tmp/gp-portxover-XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        dir = tmpl;
    }
    ~Fixture() {
        for (auto &b : bufs) fab.remove_device_memory(b.data());
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    PortCalibration calibration() {
        PortCalibration pc;
        pc.gpu = 0;
        pc.gpu_label = "GPU test";
        pc.port = be->ports().at(0);
        pc.key = port_key("GPU-test-uuid", "0000:01:00.0", pc.port, "13000");
        pc.ctx = ctx.get();
        pc.pd = pd.get();
        pc.reg = reg.get();
        // "device" memory: host memory declared to the fake device (its
        // lower device bandwidth applies to direct operations touching it)
        pc.mem.alloc = [this](std::size_t n, std::string *err) -> void * {
            if (fail_alloc) {
                *err = "out of device memory (test)";
                return nullptr;
            }
            ++allocs;
            bufs.emplace_back(n, 0x5a);
            fab.add_device_memory(bufs.back().data(), n);
            return bufs.back().data();
        };
        pc.mem.release = [this](void *) { ++releases; };
        // free stage copies: the fabric's parameters alone decide
        pc.transfer.out_copier = pc.transfer.in_copier = std::make_shared<rdma_test::FreeCopier>();
        pc.transfer.slot_size = 1u << 20;
        pc.transfer.slots = 4;
        pc.fallback_thresh = 12345;
        return pc;
    }
    pipeline::CrossoverConfig config() const {
        pipeline::CrossoverConfig c;
        c.dir = dir;
        c.budget_s = 20;
        c.max_bytes = std::size_t{4} << 20;
        return c;
    }
    std::size_t cache_files() const {
        std::size_t n = 0;
        for (const auto &e : fs::directory_iterator(dir))
            n += e.path().filename().string().rfind("crossover-", 0) == 0;
        return n;
    }
};

FakeConfig penalty(double L_us, double host_gbps, double dev_gbps) {
    FakeConfig fc;
    fc.latency_us = L_us;
    fc.bandwidth_gbps = host_gbps;
    fc.device_bandwidth_gbps = dev_gbps;
    fc.peermem = true; // direct possible for the "GPU" buffers
    fc.modeled_clock = true; // timings and budget on the fabric's clock
    return fc;
}

} // namespace

TEST_CASE("rdma port crossover: measured where the fabric puts it, then from the cache",
          "[rdma][prober][crossover]") {
    const double L = 2e-3, B = 2e9, Bdev = 0.25e9;
    const double expected = L / (1 / Bdev - 1 / B); // ~571 KB
    reset_port_choices();
    Fixture f(penalty(L * 1e6, B / 1e9, Bdev / 1e9));
    const PortCalibration pc = f.calibration();
    const auto cfg = f.config();
    const pipeline::PairChoice &c = port_choice(pc, cfg);
    REQUIRE(c.origin == pipeline::PairOrigin::measured);
    CHECK(f.allocs == 2);
    CHECK(f.releases == 2); // the prober's buffers are freed after measuring
    CHECK(c.label == "GPU test via fake0:1 (rdma)");
    CHECK(!c.cache_path.empty());
    CHECK(f.cache_files() == 1);
    CHECK(c.describe().find("measured now in") != std::string::npos);
    // the same reference on the next transfer: obtained once
    CHECK(&port_choice(pc, f.config()) == &c);
    const double t = static_cast<double>(c.model_thresh);
    INFO("crossing " << c.model_thresh << " (threshold " << c.thresh << "), expected ~" << expected);
    CHECK(c.thresh >= c.model_thresh);
    CHECK(t > expected * 0.99); // the fitted lines cross where the model does
    CHECK(t < expected * 1.01);
    // a new process: the map is empty, the cache answers without measuring
    const std::size_t thresh = c.thresh;
    const std::string cache_path = c.cache_path; // `c` dies with the reset below
    reset_port_choices();
    f.fail_alloc = true; // measuring now would fail
    const auto cfg_again = f.config();
    const pipeline::PairChoice &again = port_choice(pc, cfg_again);
    CHECK(again.origin == pipeline::PairOrigin::cache);
    CHECK(again.thresh == thresh);
    CHECK(again.describe().find("from cache " + cache_path) != std::string::npos);
    CHECK(f.allocs == 2);
    reset_port_choices();
}

TEST_CASE("rdma port crossover: another port or GPU is another cache entry", "[rdma][crossover]") {
    PortInfo a, b;
    a.name = "mlx5_0:1";
    a.device = "mlx5_0";
    b.name = "mlx5_1:1";
    b.device = "mlx5_1";
    const auto ka = port_key("GPU-a", "0000:01:00.0", a, "13000");
    CHECK(ka.wire_kind == "rdma");
    CHECK(model::key_hash(ka) != model::key_hash(port_key("GPU-a", "0000:01:00.0", b, "13000")));
    CHECK(model::key_hash(ka) != model::key_hash(port_key("GPU-b", "0000:01:00.0", a, "13000")));
    CHECK(model::key_hash(ka) != model::key_hash(port_key("GPU-a", "0000:01:00.0", a, "13001")));
}

TEST_CASE("rdma port crossover: no prober -> fallback threshold, nothing stored",
          "[rdma][crossover]") {
    reset_port_choices();
    Fixture f(penalty(10, 2.0, 0.25));
    f.fail_alloc = true;
    const PortCalibration cal = f.calibration();
    const auto cfg = f.config();
    const pipeline::PairChoice &c = port_choice(cal, cfg);
    CHECK(c.origin == pipeline::PairOrigin::fallback);
    CHECK(c.thresh == 12345);
    CHECK(f.cache_files() == 0);
    CHECK(c.describe().find("fallback") != std::string::npos);
    reset_port_choices();
}

TEST_CASE("rdma port crossover: calibration off and nothing cached -> fallback", "[rdma][crossover]") {
    reset_port_choices();
    Fixture f(penalty(10, 2.0, 0.25));
    auto cfg = f.config();
    cfg.mode = model::CalibMode::off;
    const PortCalibration cal = f.calibration();
    const pipeline::PairChoice &c = port_choice(cal, cfg);
    CHECK(c.origin == pipeline::PairOrigin::fallback);
    CHECK(c.thresh == 12345);
    CHECK(f.allocs == 0);
    reset_port_choices();
}
