// Calibration over the RDMA wire: RdmaProber + model::calibrate on the fake
// fabric. The fake's parameters fix where direct and staged cross:
//   direct  ~ L + n / B_dev   (one RDMA WRITE touching "GPU" memory)
//   staged  ~ 2L + n / B      (PUT_BEGIN and chunk WRITEs back to back, then
//                              the CREDITs back; host bounce buffers; as long
//                              as the message fits in the slots, else every
//                              further round of slots costs another 2L)
// so n* = L / (1/B_dev - 1/B). The fabric runs on its modeled clock, which
// the prober and the calibration's budget read: the timings are exactly the
// fabric's, whatever the load of the machine, and the result is
// deterministic.
#include <gdrpipe/model/calibrate.hpp>
#include <gdrpipe/rdma/fake_backend.hpp>
#include <gdrpipe/rdma/prober.hpp>

#include "free_copier.hpp"

#include "gp_catch.hpp"

#include <cstring>
#include <vector>

using namespace gdrpipe::rdma;
namespace model = gdrpipe::model;

namespace {

struct Calib {
    model::CalibResult result;
    std::uint64_t mismatches = 0;
};

Calib run(double latency_us, double host_gbps, double dev_gbps) {
    FakeConfig fc;
    fc.latency_us = latency_us;
    fc.bandwidth_gbps = host_gbps;
    fc.device_bandwidth_gbps = dev_gbps;
    fc.peermem = true; // the "GPU" buffers get MRs (direct possible)
    fc.modeled_clock = true;
    FakeFabric fab(fc);
    auto be = fab.backend();
    auto ctx = std::move(be->open(be->ports().at(0)).value());
    auto pd = std::move(ctx->alloc_pd().value());
    Registrar reg(*pd, DeviceRegHooks{});
    const std::size_t cap = std::size_t{4} << 20;
    std::vector<std::uint8_t> src(cap, 0x5a), dst(cap, 0);
    fab.add_device_memory(src.data(), cap);
    fab.add_device_memory(dst.data(), cap);

    RdmaProberConfig pc;
    pc.src = src.data();
    pc.dst = dst.data();
    pc.capacity = cap;
    pc.kind = MemKind::device;
    // stage copies cost nothing here (they would be D2H/H2D copies on the
    // copy engines, modelled by neither side): the fabric's parameters alone
    // decide. The data is checked by the transfer tests, not here.
    pc.transfer.out_copier = pc.transfer.in_copier = std::make_shared<rdma_test::FreeCopier>();
    RdmaProber prober(*ctx, *pd, reg, pc);

    model::CalibOptions o;
    o.min_bytes = 4096;
    o.max_bytes = cap;
    o.repeats = 5;
    o.budget_s = 20;
    o.tune_pipeline = false;
    o.clock = prober.clock();
    // 1 MiB x 4: every size fits in one round of slots, so the staged time
    // has no credit round trips beyond the first (~2L + n/B)
    o.pipeline = model::PipelineParams{std::size_t{1} << 20, 4};
    Calib c;
    c.result = model::calibrate(prober, o);
    c.mismatches = prober.mismatches();
    CHECK(dst[cap - 1] == 0x5a); // the largest direct puts really landed
    return c;
}

} // namespace

TEST_CASE("rdma prober: the crossover lies where the fake fabric's parameters put it",
          "[rdma][prober]") {
    const double L = 2e-3, B = 2e9, Bdev = 0.25e9; // s, bytes/s
    const double expected = L / (1 / Bdev - 1 / B); // ~571 KB
    Calib c = run(L * 1e6, B / 1e9, Bdev / 1e9);
    REQUIRE(c.result.status == model::CalibStatus::ok);
    CHECK(c.mismatches == 0);
    const model::CostModel &m = c.result.record.model;
    const auto &x = m.crossover();
    const double t = static_cast<double>(x.threshold);
    INFO("threshold " << x.threshold << ", expected ~" << expected << ", kind "
                      << model::crossover_kind_name(x.kind));
    CHECK(x.kind == model::CrossoverKind::single);
    CHECK(t > expected * 0.99); // the fitted lines cross where the model does
    CHECK(t < expected * 1.01);
    CHECK(m.choose(4096) == model::Path::direct);
    CHECK(m.choose(std::size_t{4} << 20) == model::Path::staged);
    // the modeled clock makes the calibration a function of the fabric alone
    Calib again = run(L * 1e6, B / 1e9, Bdev / 1e9);
    CHECK(again.result.record.model.crossover().threshold == x.threshold);
}

TEST_CASE("rdma prober: without a GPU-access penalty direct wins at every size",
          "[rdma][prober]") {
    Calib c = run(2000, 2.0, 0.0); // device memory as fast as host memory
    REQUIRE(c.result.status == model::CalibStatus::ok);
    const auto &x = c.result.record.model.crossover();
    INFO("threshold " << x.threshold << ", kind " << model::crossover_kind_name(x.kind));
    CHECK(x.threshold == model::kNever);
}
