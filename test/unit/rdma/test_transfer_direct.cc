// Direct path (RDMA WRITE/READ on registered memory) and its fallbacks.
#include "rdma_fixture.hpp"

#include <cerrno>
#include <cstdlib>

using namespace rdma_test;

TEST_CASE("direct: put and get are byte-exact for many sizes and offsets", "[rdma][direct]") {
    Pair p;
    std::vector<std::uint8_t> owner(300000, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()});
    REQUIRE(key);
    REQUIRE(key->direct());
    const std::size_t sizes[] = {1, 3, 63, 64, 4095, 4096, 4097, 65535, 200000};
    const std::size_t offsets[] = {0, 1, 4093, 50000};
    unsigned seed = 1;
    for (std::size_t n : sizes) {
        for (std::size_t off : offsets) {
            if (off + n > owner.size()) continue;
            auto src = pattern(n, seed++);
            Result put;
            REQUIRE(p.a.eng->put({src.data(), n}, key->addr + off, *key, put.cb(),
                                 PathChoice::direct) == 0);
            REQUIRE(p.run_until([&] { return put.done; }));
            REQUIRE(put.status == 0);
            REQUIRE(std::memcmp(owner.data() + off, src.data(), n) == 0);
            std::vector<std::uint8_t> back(n + 2, 0xee);
            Result get;
            REQUIRE(p.a.eng->get({back.data() + 1, n}, key->addr + off, *key, get.cb(),
                                 PathChoice::direct) == 0);
            REQUIRE(p.run_until([&] { return get.done; }));
            REQUIRE(get.status == 0);
            REQUIRE(std::memcmp(back.data() + 1, src.data(), n) == 0);
            CHECK(back[0] == 0xee);
            CHECK(back[n + 1] == 0xee);
        }
    }
    const auto st = p.a.eng->stats();
    CHECK(st.direct > 0);
    CHECK(st.staged == 0);
    CHECK(st.fallbacks == 0);
    CHECK(p.b.out->copies.load() == 0); // no staging anywhere
}

TEST_CASE("direct: completions are delivered in start order", "[rdma][direct]") {
    Pair p;
    std::vector<std::uint8_t> owner(1 << 16, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    std::vector<int> order;
    std::vector<std::vector<std::uint8_t>> srcs;
    for (int i = 0; i < 20; ++i) srcs.push_back(pattern(100, static_cast<unsigned>(i)));
    for (int i = 0; i < 20; ++i) {
        REQUIRE(p.a.eng->put({srcs[static_cast<std::size_t>(i)].data(), 100}, key.addr + 100u * static_cast<unsigned>(i), key,
                             [&order, i](int st) {
                                 CHECK(st == 0);
                                 order.push_back(i);
                             }) == 0);
    }
    REQUIRE(p.run_until([&] { return order.size() == 20; }));
    for (int i = 0; i < 20; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
}

TEST_CASE("direct: a remote key matching no registration -> error, no crash", "[rdma][direct]") {
    Pair p;
    std::vector<std::uint8_t> owner(4096, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    RemoteKey forged = key;
    forged.rkey ^= 0x1000u;
    auto src = pattern(512, 5);
    Result r;
    REQUIRE(p.a.eng->put({src.data(), 512}, key.addr, forged, r.cb(), PathChoice::direct) == 0);
    REQUIRE(p.run_until([&] { return r.done; }));
    CHECK(r.status < 0);
    CHECK(owner[0] == 0);
    // RC semantics: the QP is in error; the endpoint reports it
    CHECK(p.a.conn_errors == 1);
    CHECK(p.a.eng->state() == ConnState::error);
    Result r2;
    CHECK(p.a.eng->put({src.data(), 512}, key.addr, key, r2.cb()) == -ECONNRESET);
    // a range outside the key is refused before anything is posted
    Pair q;
    auto k2 = q.b.eng->expose({owner.data(), 100}).value();
    CHECK(q.a.eng->put({src.data(), 512}, k2.addr, k2, r2.cb()) == -EINVAL);
    CHECK(q.a.eng->put({src.data(), 50}, k2.addr + 60, k2, r2.cb()) == -EINVAL);
}

TEST_CASE("direct: unregistrable device memory falls back to the staged path", "[rdma][direct]") {
    // no dma-buf hook, no peermem: device memory is staged only
    Pair p;
    auto *gpu = static_cast<std::uint8_t *>(std::aligned_alloc(1 << 16, 1 << 17));
    p.fab.add_device_memory(gpu, 1 << 17);
    std::memset(gpu, 0, 1 << 17);
    std::vector<std::uint8_t> owner(1 << 17, 0);
    auto key = p.b.eng->expose({owner.data(), owner.size()}).value();
    auto src = pattern(40000, 11);
    std::memcpy(gpu, src.data(), src.size());
    Result r;
    REQUIRE(p.a.eng->put({gpu, src.size(), MemKind::device}, key.addr, key, r.cb(),
                         PathChoice::direct) == 0);
    REQUIRE(p.run_until([&] { return r.done; }));
    CHECK(r.status == 0);
    CHECK(std::memcmp(owner.data(), src.data(), src.size()) == 0);
    CHECK(p.a.eng->stats().fallbacks == 1);
    CHECK(p.a.eng->stats().staged == 1);
    CHECK(p.a.out->copies.load() > 0);
    // the owner's device memory too: its key has no rkey, requests are staged
    auto *gpu_b = static_cast<std::uint8_t *>(std::aligned_alloc(1 << 16, 1 << 16));
    p.fab.add_device_memory(gpu_b, 1 << 16);
    auto kb = p.b.eng->expose({gpu_b, 1 << 16, MemKind::device}).value();
    CHECK_FALSE(kb.direct());
    Result r2;
    REQUIRE(p.a.eng->put({src.data(), 1000}, kb.addr, kb, r2.cb()) == 0);
    REQUIRE(p.run_until([&] { return r2.done; }));
    CHECK(r2.status == 0);
    CHECK(std::memcmp(gpu_b, src.data(), 1000) == 0);
    REQUIRE(p.drain());
    std::free(gpu);
    std::free(gpu_b);
}

TEST_CASE("direct: with dma-buf the device buffer is written by the NIC", "[rdma][direct]") {
    FakeFabric *fabp = nullptr;
    DeviceRegHooks hooks;
    hooks.get_dmabuf_fd = [&fabp](const void *ptr, std::size_t n, int *fd, std::uint64_t *off) {
        const int r = fabp->export_dmabuf(ptr, n);
        if (r < 0) return r;
        *fd = r;
        *off = 0;
        return 0;
    };
    hooks.close_dmabuf_fd = [&fabp](int fd) { fabp->close_dmabuf(fd); };
    // the hooks only run on registration, after the fixture exists
    Pair p({}, Pair::small_config(), hooks);
    fabp = &p.fab;
    auto *gpu = static_cast<std::uint8_t *>(std::aligned_alloc(1 << 16, 1 << 16));
    p.fab.add_device_memory(gpu, 1 << 16);
    std::memset(gpu, 0, 1 << 16);
    auto key = p.b.eng->expose({gpu, 1 << 16, MemKind::device}).value();
    CHECK(key.direct());
    auto src = pattern(5000, 3);
    Result r;
    REQUIRE(p.a.eng->put({src.data(), src.size()}, key.addr + 10, key, r.cb()) == 0);
    REQUIRE(p.run_until([&] { return r.done; }));
    CHECK(r.status == 0);
    CHECK(std::memcmp(gpu + 10, src.data(), src.size()) == 0);
    CHECK(p.fab.stats().dmabuf_regs == 1);
    CHECK(p.a.eng->stats().direct == 1);
    // freed: the exposure and the registration go away
    CHECK(p.b.eng->invalidate(gpu, 1 << 16) == 1);
    std::free(gpu);
}

TEST_CASE("direct: a put into flagged device memory completes after the owner's flush",
          "[rdma][direct]") {
    FakeFabric *fabp = nullptr;
    DeviceRegHooks hooks;
    hooks.get_dmabuf_fd = [&fabp](const void *ptr, std::size_t n, int *fd, std::uint64_t *off) {
        const int r = fabp->export_dmabuf(ptr, n);
        if (r < 0) return r;
        *fd = r;
        *off = 0;
        return 0;
    };
    hooks.close_dmabuf_fd = [&fabp](int fd) { fabp->close_dmabuf(fd); };
    int flushes = 0, flush_status = 0;
    std::uint64_t flushed_addr = 0, flushed_len = 0;
    TransferConfig tc = Pair::small_config();
    tc.flush_remote_writes = [&](std::uint64_t a, std::uint64_t n) {
        ++flushes;
        flushed_addr = a;
        flushed_len = n;
        return flush_status;
    };
    Pair p({}, tc, hooks);
    fabp = &p.fab;
    auto *gpu = static_cast<std::uint8_t *>(std::aligned_alloc(1 << 16, 1 << 16));
    p.fab.add_device_memory(gpu, 1 << 16);
    std::memset(gpu, 0, 1 << 16);
    auto key = p.b.eng->expose({gpu, 1 << 16, MemKind::device}).value();
    REQUIRE(key.direct());
    CHECK(key.flush_on_write());
    auto src = pattern(3000, 5);
    int flushes_at_completion = -1;
    Result r;
    auto cb = [&](int st) {
        flushes_at_completion = flushes;
        r.done = true;
        r.status = st;
    };
    REQUIRE(p.a.eng->put({src.data(), src.size()}, key.addr + 64, key, cb) == 0);
    REQUIRE(p.run_until([&] { return r.done; }));
    CHECK(r.status == 0);
    CHECK(flushes_at_completion == 1); // the flush ran before the put completed
    CHECK(flushed_addr == key.addr + 64);
    CHECK(flushed_len == src.size());
    CHECK(std::memcmp(gpu + 64, src.data(), src.size()) == 0);
    CHECK(p.a.eng->stats().flush_requests == 1);
    CHECK(p.b.eng->stats().flushes_done == 1);

    // a get reads device memory: no flush at the owner
    std::vector<std::uint8_t> back(3000);
    Result g;
    REQUIRE(p.a.eng->get({back.data(), back.size()}, key.addr + 64, key, g.cb()) == 0);
    REQUIRE(p.run_until([&] { return g.done; }));
    CHECK(g.status == 0);
    CHECK(flushes == 1);
    CHECK(back == src);

    // the owner's flush fails: so does the put (the connection stays up)
    flush_status = -EIO;
    Result f;
    REQUIRE(p.a.eng->put({src.data(), 100}, key.addr, key, f.cb()) == 0);
    REQUIRE(p.run_until([&] { return f.done; }));
    CHECK(f.status == -EIO);
    CHECK(p.a.eng->state() == ConnState::connected);

    // host memory is never flagged
    std::vector<std::uint8_t> host(4096);
    auto hk = p.b.eng->expose({host.data(), host.size()}).value();
    CHECK_FALSE(hk.flush_on_write());
    CHECK(p.b.eng->invalidate(gpu, 1 << 16) == 1);
    std::free(gpu);
}
