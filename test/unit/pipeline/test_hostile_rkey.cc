// A hostile owner against the direct path: it hands out a remote key whose
// length is larger than the GPU allocation behind its handle. The importer
// must measure the allocation it imported and refuse the key, whatever the
// transfer's range, instead of copying past the mapping.
#include "server.hpp"

#include "gdrpipe/pipeline/registry.hpp"

#include <algorithm>
#include <cerrno>

using namespace pt;

namespace {

constexpr size_t kReal = size_t{64} << 10;
constexpr size_t kForged = size_t{1} << 20;

// Starts a transfer; a queued one is run to completion. Returns the start's
// result when it is not "queued", else the completion status.
int try_xfer(Node &n, bool is_get, void *local, size_t len, uint64_t remote,
             const gp_rkey_t &rkey) {
    Done d;
    struct iovec iov{local, len};
    int r = gp_xfer_start(n.engines[0], n.peer, is_get ? 1 : 0, &iov, 1, remote, &rkey, Done::cb,
                          &d);
    if (r <= 0) return r;
    auto t0 = Clock::now();
    while (!d.done) {
        n.pump();
        if (std::chrono::duration<double>(Clock::now() - t0).count() > 20) return -9999;
    }
    return d.status == 0 ? 1 : d.status; // 1: a queued transfer that completed
}

int forged_length(Node &n, int where, uint64_t seed) {
    Reply r;
    PT_CHECK(remote_alloc(n, where, kReal, seed, true, &r));
    gp_rkey_t forged = r.rkey;
    forged.length = kForged;
    gp_rkey_seal(&forged);
    Buf l;
    PT_CHECK(buf_alloc(l, kDev0, kForged));
    PT_CHECK(buf_fill(l, seed + 1));
    const auto before = n.eng()->stats();

    // past the real end, from its start, and a range inside the real
    // allocation: the key itself is refused
    int put_all = try_xfer(n, false, l.p, kForged, r.addr, forged);
    int get_tail = try_xfer(n, true, l.p, 4096, r.addr + kReal, forged);
    int get_head = try_xfer(n, true, l.p, 4096, r.addr, forged);
    std::fprintf(stderr, "forged rkey (where %d): put %d, get past the end %d, get inside %d\n",
                 where, put_all, get_tail, get_head);
    PT_CHECK(put_all == -EINVAL);
    PT_CHECK(get_tail == -EINVAL);
    PT_CHECK(get_head == -EINVAL);
    const auto after = n.eng()->stats();
    PT_CHECK(after.direct.xfers == before.direct.xfers);
    PT_CHECK(after.staged.xfers == before.staged.xfers);
    PT_CHECK(remote_check(n, r.addr, seed)); // the owner's buffer is untouched

    // the honest key still goes direct
    PT_CHECK(buf_zero(l));
    Buf g;
    PT_CHECK(buf_alloc(g, kDev0, kReal));
    PT_CHECK(xfer(n, 0, true, g.p, kReal, r.addr, r.rkey) == 0);
    PT_CHECK(buf_check(g, seed));
    PT_CHECK(n.eng()->stats().direct.xfers == before.direct.xfers + 1);
    buf_free(g);
    buf_free(l);
    PT_CHECK(remote_free(n, r.addr));
    return 0;
}

} // namespace

TEST_CASE("hostile owner: an rkey longer than the imported allocation is refused",
          "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    gdrpipe::pipeline::set_pool_ipc(true); // exportable pools go direct
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_DIRECT)})) return rc;
        if (int rc = forged_length(n, kDev0, 21)) return rc;   // legacy IPC handle
        if (int rc = forged_length(n, kXPool0, 31)) return rc; // exported pool pointer
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 60) == "");
}

// Review finding M6 (b): an address naming this process itself (its pid,
// fd and segment, which any peer can copy from its own address) makes the
// endpoint a loopback, whose transfers used the remote address as it was.
// They may now only reach memory registered here, as a peer's may.
TEST_CASE("a loopback endpoint reaches only registered memory", "[pipeline][sim][security]") {
    SKIP_WITHOUT_SIM();
    auto a = [](Node &n) -> int {
        if (int rc = node_setup(n, {config(GP_PATH_DIRECT)})) return rc;
        std::vector<char> mine(gp_shm_address_length());
        gp_shm_iface_address(n.iface, mine.data());
        char err[256];
        gp_shm_peer_t *self = gp_shm_connect(n.iface, mine.data(), mine.size(), err, sizeof(err));
        PT_CHECK(self != nullptr);
        const size_t len = 65536;
        Buf src, victim;
        PT_CHECK(buf_alloc(src, kDev0, len));
        PT_CHECK(buf_alloc(victim, kDev0, len));
        PT_CHECK(buf_fill(src, 31));
        PT_CHECK(buf_zero(victim));
        gp_rkey_t k{};
        k.kind = GP_RKEY_CUDA_IPC;
        k.pid = getpid();
        k.device = 0;
        k.handle_fd = -1;
        k.base = reinterpret_cast<uintptr_t>(victim.p);
        k.length = len;
        gp_rkey_seal(&k);
        auto put = [&](const gp_rkey_t &key) {
            return xfer(n, 0, false, src.p, len, k.base, key, 10, self);
        };
        const int st = put(k);
        std::fprintf(stderr, "loopback into unregistered memory: %d\n", st);
        PT_CHECK(st != 0 && st != -9999);
        std::vector<uint8_t> back(len, 1);
        PT_CHECK(buf_read(victim, back.data(), len));
        PT_CHECK(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0; }));
        // registered, the forged key (no token) is still refused (review
        // finding M4); the registration's own key is allowed
        void *reg = nullptr;
        gp_rkey_t own{};
        PT_CHECK(gp_mem_register(victim.p, len, 0, &own, &reg, err, sizeof(err)) == 0);
        const int forged = put(k);
        PT_CHECK(forged != 0 && forged != -9999);
        PT_CHECK(buf_read(victim, back.data(), len));
        PT_CHECK(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0; }));
        PT_CHECK(put(own) == 0);
        PT_CHECK(buf_check(victim, 31));
        gp_mem_deregister(reg);
        gp_shm_disconnect(n.iface, self);
        buf_free(src);
        buf_free(victim);
        PT_CHECK(quit(n));
        node_teardown(n);
        return 0;
    };
    auto b = [](Node &n) { return serve_main(n, {config(GP_PATH_AUTO)}); };
    REQUIRE(run_pair(a, b, 60) == "");
}
