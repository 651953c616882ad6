// The command protocol between the driving process A and the serving
// process B of the pipeline tests.
#pragma once

#include "pair.hpp"

#include <map>

namespace pt {

enum Op : int { kAlloc = 1, kCheck, kFree, kXfer, kStall, kStats, kQuit, kPoolReset };

struct Cmd {
    int op = 0;
    int where = kHost;
    int flag = 0;      // alloc: 1 fill with the pattern, 0 zero; xfer: is_get
    int engine = 0;
    uint64_t len = 0;
    uint64_t seed = 0;
    uint64_t addr = 0;
    gp_rkey_t rkey{};
};

struct Reply {
    int status = 0;
    uint64_t addr = 0;
    uint64_t value = 0;
    uint64_t value2 = 0;
    gp_rkey_t rkey{};
};

inline bool call(Node &n, const Cmd &c, Reply *r, double timeout_s = 20) {
    return n.send_all(&c, sizeof(c)) && n.recv_all(r, sizeof(*r), timeout_s);
}

// A transfer run by one side against a buffer of the other (both directions).
inline int run_xfer_cmd(Node &n, const Cmd &c) {
    Buf b;
    PT_CHECK(buf_alloc(b, c.where, c.len));
    PT_CHECK(c.flag ? buf_zero(b) : buf_fill(b, c.seed));
    int st = xfer(n, size_t(c.engine), c.flag != 0, b.p, c.len, c.addr, c.rkey);
    int rc = st;
    if (st == 0 && c.flag && !buf_check(b, c.seed)) rc = 1000;
    buf_free(b);
    return rc;
}

// B: serves commands until kQuit; returns the exit code.
inline int serve(Node &n) {
    struct Entry {
        Buf b;
        void *reg = nullptr;
    };
    std::map<uint64_t, Entry> bufs;
    for (;;) {
        n.pump();
        if (!n.readable(0)) continue;
        Cmd c;
        if (::recv(n.sock, &c, sizeof(c), MSG_WAITALL) != ssize_t(sizeof(c))) return 2;
        Reply r;
        switch (c.op) {
        case kAlloc: {
            Entry e;
            char err[256];
            if (!buf_alloc(e.b, c.where, c.len) ||
                !(c.flag ? buf_fill(e.b, c.seed) : buf_zero(e.b)) ||
                gp_mem_register(e.b.p, c.len, 42, &r.rkey, &e.reg, err, sizeof(err)) != 0) {
                r.status = -1;
                break;
            }
            r.addr = reinterpret_cast<uint64_t>(e.b.p);
            bufs[r.addr] = e;
            break;
        }
        case kCheck: {
            auto it = bufs.find(c.addr);
            r.status = (it != bufs.end() && buf_check(it->second.b, c.seed)) ? 0 : -1;
            break;
        }
        case kFree: {
            auto it = bufs.find(c.addr);
            if (it == bufs.end()) {
                r.status = -1;
                break;
            }
            gp_mem_deregister(it->second.reg);
            buf_free(it->second.b);
            bufs.erase(it);
            break;
        }
        case kXfer: r.status = run_xfer_cmd(n, c); break;
        case kStall:
            n.send_all(&r, sizeof(r));
            ::sleep(60);
            return 3;
        case kPoolReset: r.status = xpool_reset() ? 0 : -1; break;
        case kStats: {
            auto s = n.eng()->stats();
            r.value = s.ctrl_dropped;
            r.value2 = s.served.xfers;
            break;
        }
        case kQuit:
            n.send_all(&r, sizeof(r));
            for (auto &kv : bufs) {
                gp_mem_deregister(kv.second.reg);
                buf_free(kv.second.b);
            }
            node_teardown(n);
            return 0;
        default: r.status = -1;
        }
        if (!n.send_all(&r, sizeof(r))) return 4;
    }
}

inline int serve_main(Node &n, const std::vector<gp_xfer_config_t> &cfgs, bool hooks = false) {
    if (hooks) {
        char why[256];
        if (gp_hooks_install(why, sizeof(why)) != 1) {
            std::fprintf(stderr, "hooks: %s\n", why);
            return 5;
        }
    }
    if (int rc = node_setup(n, cfgs)) return rc;
    return serve(n);
}

inline bool quit(Node &n) {
    Cmd c;
    c.op = kQuit;
    Reply r;
    return call(n, c, &r);
}

// A: remote buffer in B
inline bool remote_alloc(Node &n, int where, size_t len, uint64_t seed, bool fill, Reply *r) {
    Cmd c;
    c.op = kAlloc;
    c.where = where;
    c.len = len;
    c.seed = seed;
    c.flag = fill ? 1 : 0;
    return call(n, c, r) && r->status == 0;
}

inline bool remote_check(Node &n, uint64_t addr, uint64_t seed) {
    Cmd c;
    c.op = kCheck;
    c.addr = addr;
    c.seed = seed;
    Reply r;
    return call(n, c, &r) && r.status == 0;
}

inline bool remote_free(Node &n, uint64_t addr) {
    Cmd c;
    c.op = kFree;
    c.addr = addr;
    Reply r;
    return call(n, c, &r) && r.status == 0;
}

// One get and one put of `len` bytes between a local buffer (where_l) and a
// fresh remote one (where_r), data checked byte for byte. 0 or a failure code.
inline int get_put(Node &n, size_t eng, int where_l, int where_r, size_t len, uint64_t seed) {
    Reply r;
    PT_CHECK(remote_alloc(n, where_r, len, seed, true, &r));
    Buf l;
    PT_CHECK(buf_alloc(l, where_l, len));
    PT_CHECK(buf_zero(l));
    int st = xfer(n, eng, true, l.p, len, r.addr, r.rkey);
    if (st != 0) std::fprintf(stderr, "get status %d (eng %zu, %d<-%d, %zu)\n", st, eng, where_l,
                              where_r, len);
    PT_CHECK(st == 0);
    PT_CHECK(buf_check(l, seed));
    PT_CHECK(buf_fill(l, seed + 7));
    st = xfer(n, eng, false, l.p, len, r.addr, r.rkey);
    if (st != 0) std::fprintf(stderr, "put status %d (eng %zu, %d->%d, %zu)\n", st, eng, where_l,
                              where_r, len);
    PT_CHECK(st == 0);
    PT_CHECK(remote_check(n, r.addr, seed + 7));
    PT_CHECK(remote_free(n, r.addr));
    buf_free(l);
    return 0;
}

} // namespace pt
