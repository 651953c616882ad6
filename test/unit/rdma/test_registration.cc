// Registration through the region cache: path order, fallback, exhaustion,
// invalidation.
#include "rdma_fixture.hpp"

#include <cerrno>
#include <cstdlib>

using namespace rdma_test;

namespace {

struct RegEnv {
    explicit RegEnv(FakeConfig fc = {}, RegistrarConfig rc = {}, bool with_dmabuf = true) : fab(fc) {
        be = fab.backend();
        ctx = std::move(be->open(be->ports().at(0)).value());
        pd = std::move(ctx->alloc_pd().value());
        DeviceRegHooks hooks;
        if (with_dmabuf) {
            hooks.get_dmabuf_fd = [this](const void *p, std::size_t n, int *fd, std::uint64_t *off) {
                ++exports;
                const int r = fab.export_dmabuf(p, n);
                if (r < 0) {
                    return r;
                }
                *fd = r;
                *off = 0;
                return 0;
            };
            hooks.close_dmabuf_fd = [this](int fd) {
                ++closes;
                fab.close_dmabuf(fd);
            };
        }
        reg = std::make_unique<Registrar>(*pd, hooks, rc);
        // a fake "GPU allocation": 1 MiB, 64 KiB aligned
        gpu = static_cast<std::uint8_t *>(std::aligned_alloc(1 << 16, 1 << 20));
        fab.add_device_memory(gpu, 1 << 20);
    }
    ~RegEnv() {
        reg.reset();
        std::free(gpu);
    }
    gdrpipe::cache::AddrRange bounds() const {
        return {reinterpret_cast<std::uintptr_t>(gpu), reinterpret_cast<std::uintptr_t>(gpu) + (1 << 20)};
    }
    FakeFabric fab;
    std::unique_ptr<Backend> be;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<Registrar> reg;
    std::uint8_t *gpu = nullptr;
    int exports = 0, closes = 0;
};

} // namespace

TEST_CASE("registration: device memory goes through dma-buf first, 64 KiB widened", "[rdma][reg]") {
    RegEnv env;
    auto r = env.reg->get(env.gpu + 70000, 1000, MemKind::device, 1, env.bounds());
    REQUIRE(r);
    CHECK(r->direct());
    CHECK(r->path() == RegPath::dmabuf);
    CHECK(r->addr() == reinterpret_cast<std::uintptr_t>(env.gpu) + 65536);
    CHECK(r->len() == 65536);
    CHECK(env.exports == 1);
    CHECK(env.closes == 1); // fd closed once registered
    CHECK(env.fab.open_dmabufs() == 0);
    // a second get of an overlapping range is a cache hit, no new registration
    const auto regs = env.fab.stats().reg_calls;
    auto r2 = env.reg->get(env.gpu + 70001, 10, MemKind::device, 1, env.bounds());
    REQUIRE(r2);
    CHECK(r2->rkey() == r->rkey());
    CHECK(env.fab.stats().reg_calls == regs);
    CHECK(env.reg->stats(MemKind::device).hits == 1);
}

TEST_CASE("registration: dma-buf unsupported -> peermem -> staged only", "[rdma][reg]") {
    RegEnv env;
    env.fab.set_dmabuf_supported(false);
    env.fab.set_peermem(true);
    auto r = env.reg->get(env.gpu, 4096, MemKind::device, 1, env.bounds());
    REQUIRE(r);
    CHECK(r->path() == RegPath::peermem);
    CHECK(r->direct());
    // dma-buf is not tried again after "unsupported"
    const int exports = env.exports;
    env.fab.set_peermem(false);
    auto r2 = env.reg->get(env.gpu + 300000, 4096, MemKind::device, 1, env.bounds());
    REQUIRE(r2); // not an error: staged only for this buffer
    CHECK_FALSE(r2->direct());
    CHECK(r2->path() == RegPath::none);
    CHECK(r2->rkey() == 0);
    CHECK(env.exports == exports);
    // the negative outcome is cached too: no new registration attempt
    const auto regs = env.fab.stats().reg_calls;
    auto r3 = env.reg->get(env.gpu + 300000, 100, MemKind::device, 1, env.bounds());
    REQUIRE(r3);
    CHECK_FALSE(r3->direct());
    CHECK(env.fab.stats().reg_calls == regs);
}

TEST_CASE("registration: no dma-buf hook and no peermem -> staged only", "[rdma][reg]") {
    RegEnv env({}, {}, /*with_dmabuf=*/false);
    auto r = env.reg->get(env.gpu, 4096, MemKind::device, 1, env.bounds());
    REQUIRE(r);
    CHECK_FALSE(r->direct());
    CHECK(r->path() == RegPath::none);
}

TEST_CASE("registration: MR exhaustion evicts unused registrations through the cache",
          "[rdma][reg]") {
    RegEnv env;
    env.fab.set_max_mrs(3);
    std::vector<std::uint8_t> host(1 << 20);
    std::uintptr_t base = (reinterpret_cast<std::uintptr_t>(host.data()) + 4095) & ~std::uintptr_t{4095};
    auto *p = reinterpret_cast<std::uint8_t *>(base);
    for (int i = 0; i < 3; ++i) { // three MRs, released (still cached)
        auto r = env.reg->get(p + i * 8192, 100, MemKind::host);
        REQUIRE(r);
        CHECK(r->direct());
    }
    CHECK(env.fab.stats().live_mrs == 3);
    {
        // held: this one cannot be evicted
        auto held = env.reg->get(p, 100, MemKind::host);
        REQUIRE(held);
        auto r = env.reg->get(p + 20 * 8192, 100, MemKind::host);
        REQUIRE(r);
        CHECK(r->direct());
        CHECK(held->cached());
        CHECK(env.reg->stats(MemKind::host).flushed >= 1);
        CHECK(env.fab.stats().live_mrs <= 3);
    }
    // all MRs held and the limit reached: an error (the engine stages)
    env.fab.set_max_mrs(1);
    env.reg->invalidate(p, 1 << 19);
    auto h1 = env.reg->get(p, 100, MemKind::host);
    REQUIRE(h1);
    auto h2 = env.reg->get(p + 40 * 8192, 100, MemKind::host);
    REQUIRE_FALSE(h2);
    CHECK(h2.error().code == -ENOMEM);
}

TEST_CASE("registration: invalidate while registered -> re-registered next time", "[rdma][reg]") {
    RegEnv env;
    auto r = env.reg->get(env.gpu, 4096, MemKind::device, 7, env.bounds());
    REQUIRE(r);
    const std::uint32_t old_rkey = r->rkey();
    CHECK(env.reg->invalidate(env.gpu, 1 << 20) == 1);
    CHECK_FALSE(r->cached());
    CHECK(env.fab.stats().live_mrs == 1); // still in use: deregistered at release
    r = Registration{};
    CHECK(env.fab.stats().live_mrs == 0);
    auto r2 = env.reg->get(env.gpu, 4096, MemKind::device, 7, env.bounds());
    REQUIRE(r2);
    CHECK(r2->direct());
    CHECK(r2->rkey() != old_rkey);
    CHECK(env.reg->stats(MemKind::device).pins == 2);
    // a new allocation at the same address (new tag) is not served the old MR
    auto r3 = env.reg->get(env.gpu, 4096, MemKind::device, 8, env.bounds());
    REQUIRE(r3);
    CHECK(r3->rkey() != r2->rkey());
}
