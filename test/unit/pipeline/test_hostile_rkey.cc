// A hostile owner against the direct path: it hands out a remote key whose
// length is larger than the GPU allocation behind its handle. The importer
// must measure the allocation it imported and refuse the key, whatever the
// transfer's range, instead of copying past the mapping.
#include "server.hpp"

#include "gdrpipe/pipeline/registry.hpp"

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
