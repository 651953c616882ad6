/* See verify_core.h. */
#include "verify_core.h"

#include "devmem.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VX_GUARD 64  /* bytes checked after the message */
#define VX_MAX_OFF 8 /* room for the 1/3/7-byte offsets */

static const size_t vx_primes[] = {7, 13, 7919, 104729, 1299709, 15485863};

enum {
    OPT_MAX = 256, OPT_REALLOC, OPT_ALLOC_BEFORE, OPT_INJECT, OPT_WINDOW_MAX,
    OPT_CUDA_ALLOC
};

int vx_parse(vx_t *v, const char *prog, int argc, char **argv,
             const char *extra_opts, int (*extra)(int opt, const char *arg),
             const char *extra_usage)
{
    static const struct option longopts[] = {
        {"max", required_argument, NULL, OPT_MAX},
        {"window-max", required_argument, NULL, OPT_WINDOW_MAX},
        {"realloc", no_argument, NULL, OPT_REALLOC},
        {"cuda-alloc", required_argument, NULL, OPT_CUDA_ALLOC},
        {"alloc-before", no_argument, NULL, OPT_ALLOC_BEFORE},
        {"inject-corruption", no_argument, NULL, OPT_INJECT},
        {"kill-peer", no_argument, NULL, 'K'},
        {"kill-sender", no_argument, NULL, 'S'},
        {"kill-delay", required_argument, NULL, 'D'},
        {"memtest-crash", no_argument, NULL, 'M'},
        {"free-in-flight", no_argument, NULL, 'F'},
        {"free-by", required_argument, NULL, 'B'},
        {"timeout", required_argument, NULL, 'T'},
        {"cycles", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char shortopts[64];
    int c;
    memset(v, 0, sizeof(*v));
    v->prog = prog;
    v->o.mem = GP_MEM_HOST;
    v->o.device = -1;
    v->o.max = (size_t)64 << 20;
    v->o.window_max = (size_t)256 << 10;
    snprintf(shortopts, sizeof(shortopts), "d:G:h%s", extra_opts ? extra_opts : "");
    optind = 1;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (c) {
        case 'd': {
            int t = gp_mem_parse(optarg);
            if (t < 0) {
                fprintf(stderr, "%s: -d takes host or cuda\n", prog);
                return -1;
            }
            v->o.mem = (gp_mem_t)t;
            break;
        }
        case 'G': v->o.device = atoi(optarg); break;
        case OPT_MAX:
            if (gp_parse_size(optarg, &v->o.max) != 0 ||
                v->o.max > ((size_t)1 << 30) + 64) {
                fprintf(stderr, "%s: bad --max (at most 1G)\n", prog);
                return -1;
            }
            break;
        case OPT_WINDOW_MAX:
            if (gp_parse_size(optarg, &v->o.window_max) != 0) {
                fprintf(stderr, "%s: bad --window-max\n", prog);
                return -1;
            }
            break;
        case OPT_REALLOC: v->o.realloc_phase = 1; break;
        case OPT_CUDA_ALLOC: {
            int m = gp_devmem_alloc_parse(optarg);
            if (m < 0 || gp_devmem_set_alloc((gp_devmem_alloc_t)m) != 0) {
                fprintf(stderr, "%s: --cuda-alloc takes mem, async or pool\n", prog);
                return -1;
            }
            break;
        }
        case OPT_ALLOC_BEFORE: v->o.alloc_before = 1; break;
        case OPT_INJECT: v->o.inject = 1; break;
        case 'h':
            printf("Usage: %s [options]\n"
                   "  -d host|cuda          buffer type (default host); with cuda a\n"
                   "                        D->H / H->D phase is added\n"
                   "  -G DEV                CUDA device (default: rank %% devices)\n"
                   "  --max SIZE            largest message (default 64M, at most 1G)\n"
                   "  --window-max SIZE     largest size of the 64-in-flight phase "
                   "(default 256K)\n"
                   "  --realloc             add the free/re-allocate phase\n"
                   "  --cuda-alloc MODE     device buffers from cuMemAlloc (mem, the\n"
                   "                        default), the default pool (async) or an\n"
                   "                        exportable pool (pool)\n"
                   "  --alloc-before        allocate buffers before the transport "
                   "is initialised\n"
                   "  --inject-corruption   self-test: corrupt one received byte "
                   "(must fail)\n%s", prog, extra_usage ? extra_usage : "");
            return 1;
        default:
            if (extra != NULL && c != '?' && extra(c, optarg) == 0) {
                break;
            }
            fprintf(stderr, "%s: bad option (see --help)\n", prog);
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
        return -1;
    }
    return 0;
}

static int vx_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static int vx_build_sizes(vx_t *v)
{
    size_t cap = 3 * 64 + sizeof(vx_primes) / sizeof(vx_primes[0]) + 1, n = 0;
    size_t *s = malloc(cap * sizeof(*s));
    if (s == NULL) {
        return -1;
    }
    s[n++] = 0;
    for (size_t p = 1; p <= v->o.max && p != 0; p <<= 1) {
        s[n++] = p;
        if (p >= 4) {
            s[n++] = p - 1;
        }
        if (p >= 2 && p + 1 <= v->o.max) {
            s[n++] = p + 1;
        }
    }
    for (size_t i = 0; i < sizeof(vx_primes) / sizeof(vx_primes[0]); ++i) {
        if (vx_primes[i] <= v->o.max) {
            s[n++] = vx_primes[i];
        }
    }
    if (n > 0 && s[n - 1] != v->o.max) {
        s[n++] = v->o.max; /* --max itself, e.g. 1G or an odd value */
    }
    qsort(s, n, sizeof(*s), vx_cmp_size);
    size_t m = 0;
    for (size_t i = 0; i < n; ++i) {
        if (m == 0 || s[m - 1] != s[i]) {
            s[m++] = s[i];
        }
    }
    v->sizes = s;
    v->nsizes = m;
    return 0;
}

int vx_alloc(vx_t *v)
{
    if (v->sizes == NULL && vx_build_sizes(v) != 0) {
        return -1;
    }
    v->cap = v->o.max + VX_MAX_OFF + VX_GUARD;
    v->slot_cap = (v->o.window_max < v->o.max ? v->o.window_max : v->o.max) + VX_GUARD;
    for (int t = 0; t < 2; ++t) {
        if (t == GP_MEM_CUDA && v->o.mem != GP_MEM_CUDA) {
            continue;
        }
        for (int k = 0; k < 2; ++k) {
            v->buf[t][k] = gp_mem_alloc((gp_mem_t)t, v->cap);
            if (v->buf[t][k] == NULL) {
                return -1;
            }
        }
    }
    for (int k = 0; k < 2; ++k) {
        for (int j = 0; j < VX_WINDOW; ++j) {
            v->slot[k][j] = gp_mem_alloc(v->o.mem, v->slot_cap);
            if (v->slot[k][j] == NULL) {
                return -1;
            }
        }
    }
    v->allocated = 1;
    return 0;
}

void vx_free(vx_t *v)
{
    for (int t = 0; t < 2; ++t) {
        for (int k = 0; k < 2; ++k) {
            if (v->buf[t][k]) {
                gp_mem_free((gp_mem_t)t, v->buf[t][k]);
                v->buf[t][k] = NULL;
            }
        }
    }
    for (int k = 0; k < 2; ++k) {
        for (int j = 0; j < VX_WINDOW; ++j) {
            if (v->slot[k][j]) {
                gp_mem_free(v->o.mem, v->slot[k][j]);
                v->slot[k][j] = NULL;
            }
        }
    }
    free(v->sizes);
    v->sizes = NULL;
    v->allocated = 0;
}

static uint8_t vx_poison(uint64_t msg) { return (uint8_t)(0xa0 + msg % 16); }
static uint32_t vx_tag(uint64_t msg) { return (uint32_t)(msg % 30000) + 1; }

/* receiver side: before the message lands */
static int vx_prepare_recv(gp_mem_t t, void *base, size_t off, size_t size,
                           uint64_t msg)
{
    return gp_mem_set(t, base, vx_poison(msg), off + size + VX_GUARD);
}

/* sender side: the pattern of (size, msg, sender) at base+off */
static int vx_prepare_send(vx_t *v, gp_mem_t t, void *base, size_t off,
                           size_t size, uint64_t msg)
{
    return gp_mem_fill(t, (char *)base + off, size,
                       gp_pattern_seed(size, msg, v->c->rank + 2 * v->c->pair));
}

/* receiver side: data, then guards before and after */
static void vx_check(vx_t *v, const char *phase, gp_mem_t t, void *base,
                     size_t off, size_t size, uint64_t msg)
{
    gp_mem_diff_t d[3];
    const int peer = 1 - v->c->rank;
    int rc = 0;
    if (v->o.inject && !v->injected && size >= 2) {
        v->injected = 1;
        /* self-test: one wrong byte in the middle (patterns are never 0) */
        gp_mem_set(t, (char *)base + off + size / 2, 0, 1);
    }
    rc |= gp_mem_verify(t, (char *)base + off, size,
                        gp_pattern_seed(size, msg, peer + 2 * v->c->pair), &d[0]);
    rc |= gp_mem_verify_const(t, base, off, vx_poison(msg), &d[1]);
    rc |= gp_mem_verify_const(t, (char *)base + off + size, VX_GUARD,
                              vx_poison(msg), &d[2]);
    ++v->checks;
    if (rc != 0 || d[0].bad || d[1].bad || d[2].bad) {
        if (v->fails < 20) {
            static const char *const what[] = {"data", "guard before", "guard after"};
            for (int i = 0; i < 3; ++i) {
                if (d[i].bad) {
                    fprintf(stderr, "%s: pair %d rank %d: FAIL %s: %s size %zu offset %zu "
                            "(%s, message %llu): %zu bad bytes, first at %zu "
                            "(got 0x%02x want 0x%02x)\n", v->prog, v->c->pair, v->c->rank,
                            phase, what[i], size, off, gp_mem_name(t),
                            (unsigned long long)msg, d[i].bad, d[i].first_bad,
                            d[i].got, d[i].want);
                }
            }
            if (rc != 0) {
                fprintf(stderr, "%s: pair %d rank %d: FAIL %s: size %zu: driver error "
                        "while checking\n", v->prog, v->c->pair, v->c->rank, phase, size);
            }
        }
        ++v->fails;
    }
}

static void vx_transport_fail(vx_t *v, const char *phase, const char *op,
                              size_t size)
{
    fprintf(stderr, "%s: pair %d rank %d: FAIL %s: %s of %zu bytes failed\n", v->prog,
            v->c->pair, v->c->rank, phase, op, size);
    fflush(stderr);
    ++v->fails;
    ++v->checks;
    v->c->abort(v->c->ctx); /* the peer would wait forever otherwise */
}

/* one blocking message from `sender`; placements ms (sender) / mr (receiver) */
static int vx_one_way(vx_t *v, const char *phase, int sender, gp_mem_t ms,
                      gp_mem_t mr, size_t size, size_t off)
{
    vx_comm_t *c = v->c;
    const uint64_t msg = v->msg++;
    if (c->rank == sender) {
        void *b = v->buf[ms][0];
        if (vx_prepare_send(v, ms, b, off, size, msg) != 0 ||
            c->send(c->ctx, (char *)b + off, size, vx_tag(msg)) != 0) {
            vx_transport_fail(v, phase, "send", size);
            return -1;
        }
    } else {
        void *b = v->buf[mr][1];
        if (vx_prepare_recv(mr, b, off, size, msg) != 0 ||
            c->recv(c->ctx, (char *)b + off, size, vx_tag(msg)) != 0) {
            vx_transport_fail(v, phase, "recv", size);
            return -1;
        }
        vx_check(v, phase, mr, b, off, size, msg);
    }
    return 0;
}

/* both sides send and receive at once (nonblocking) from/to given buffers */
static int vx_exchange(vx_t *v, const char *phase, gp_mem_t t, void *sb, void *rb,
                       size_t size, size_t off)
{
    vx_comm_t *c = v->c;
    const uint64_t msg0 = v->msg;
    v->msg += 2;
    /* message msg0 goes 0->1, msg0+1 goes 1->0 */
    const uint64_t out = msg0 + (uint64_t)c->rank, in = msg0 + 1 - (uint64_t)c->rank;
    void *rq[2] = {NULL, NULL};
    if (vx_prepare_recv(t, rb, off, size, in) != 0 ||
        vx_prepare_send(v, t, sb, off, size, out) != 0) {
        vx_transport_fail(v, phase, "prepare", size);
        return -1;
    }
    if (c->irecv(c->ctx, (char *)rb + off, size, vx_tag(in), &rq[0]) != 0 ||
        c->isend(c->ctx, (char *)sb + off, size, vx_tag(out), &rq[1]) != 0) {
        vx_transport_fail(v, phase, "post", size);
        return -1;
    }
    int w0 = c->wait(c->ctx, rq[0]), w1 = c->wait(c->ctx, rq[1]);
    if (w0 != 0 || w1 != 0) {
        vx_transport_fail(v, phase, w0 ? "irecv" : "isend", size);
        return -1;
    }
    vx_check(v, phase, t, rb, off, size, in);
    return 0;
}

/* 64 messages each way in flight, distinct tags, sends posted in reverse */
static int vx_window(vx_t *v, const char *phase, size_t size)
{
    vx_comm_t *c = v->c;
    const int r = c->rank;
    const uint64_t base = v->msg;
    void *rq[2 * VX_WINDOW] = {NULL};
    v->msg += 2 * VX_WINDOW;
    /* message base + 2j + s: slot j, sent by side s */
    for (int j = 0; j < VX_WINDOW; ++j) {
        uint64_t in = base + 2 * (uint64_t)j + (uint64_t)(1 - r);
        uint64_t out = base + 2 * (uint64_t)j + (uint64_t)r;
        if (vx_prepare_recv(v->o.mem, v->slot[1][j], 0, size, in) != 0 ||
            vx_prepare_send(v, v->o.mem, v->slot[0][j], 0, size, out) != 0) {
            vx_transport_fail(v, phase, "prepare", size);
            return -1;
        }
    }
    int rc = 0;
    for (int j = 0; j < VX_WINDOW && rc == 0; ++j) {
        uint64_t in = base + 2 * (uint64_t)j + (uint64_t)(1 - r);
        rc = c->irecv(c->ctx, v->slot[1][j], size, vx_tag(in), &rq[j]);
    }
    for (int j = VX_WINDOW - 1; j >= 0 && rc == 0; --j) {
        uint64_t out = base + 2 * (uint64_t)j + (uint64_t)r;
        rc = c->isend(c->ctx, v->slot[0][j], size, vx_tag(out), &rq[VX_WINDOW + j]);
    }
    if (rc != 0) {
        vx_transport_fail(v, phase, "post", size);
        return -1;
    }
    for (int j = 0; j < 2 * VX_WINDOW; ++j) {
        if (c->wait(c->ctx, rq[j]) != 0 && rc == 0) {
            rc = -1;
        }
    }
    if (rc != 0) {
        vx_transport_fail(v, phase, "wait", size);
        return -1;
    }
    for (int j = 0; j < VX_WINDOW; ++j) {
        vx_check(v, phase, v->o.mem, v->slot[1][j], 0, size,
                 base + 2 * (uint64_t)j + (uint64_t)(1 - r));
    }
    return 0;
}

/* The order phases: VX_ORDER_N messages of one size on one tag from
 * alternating device and host buffers into placements alternating in pairs
 * (device -> device, host -> device, device -> host, host -> host), so only
 * their order tells them apart. Sizes up to VX_ORDER_MAX: every eager size
 * class and the first rendezvous ones. */
#define VX_ORDER_N 16
#define VX_ORDER_MAX ((size_t)16385)

static gp_mem_t vx_order_send_mem(int k) { return (k % 2) ? GP_MEM_HOST : GP_MEM_CUDA; }
static gp_mem_t vx_order_recv_mem(int k) { return ((k / 2) % 2) ? GP_MEM_HOST : GP_MEM_CUDA; }

/* One way, sender -> receiver. unexpected: every message is sent before the
 * receiver posts a receive (it first waits for a marker sent after them, so
 * they arrive unmatched); else every receive is posted before the sender
 * starts (it waits for a marker from the receiver). */
static int vx_order(vx_t *v, const char *phase, int sender, size_t size, int unexpected)
{
    vx_comm_t *c = v->c;
    const uint64_t base = v->msg;
    const size_t stride = size + VX_GUARD;
    const uint32_t tag = vx_tag(base), mtag = vx_tag(base + VX_ORDER_N);
    const int side = c->rank == sender ? 0 : 1;
    void *rq[VX_ORDER_N] = {NULL};
    char marker = 0;
    int rc = 0;
    v->msg += VX_ORDER_N + 1;
    for (int k = 0; k < VX_ORDER_N; ++k) {
        gp_mem_t t = side == 0 ? vx_order_send_mem(k) : vx_order_recv_mem(k);
        char *p = (char *)v->buf[t][side] + (size_t)k * stride;
        if ((side == 0 ? vx_prepare_send(v, t, p, 0, size, base + (uint64_t)k)
                       : vx_prepare_recv(t, p, 0, size, base + (uint64_t)k)) != 0) {
            vx_transport_fail(v, phase, "prepare", size);
            return -1;
        }
    }
    if (side == 0) {
        if (!unexpected) {
            rc = c->recv(c->ctx, &marker, 0, mtag);
        }
        for (int k = 0; k < VX_ORDER_N && rc == 0; ++k) {
            gp_mem_t t = vx_order_send_mem(k);
            rc = c->isend(c->ctx, (char *)v->buf[t][0] + (size_t)k * stride, size, tag,
                          &rq[k]);
        }
        if (unexpected && rc == 0) {
            rc = c->send(c->ctx, &marker, 0, mtag);
        }
    } else {
        if (unexpected) {
            rc = c->recv(c->ctx, &marker, 0, mtag);
        }
        for (int k = 0; k < VX_ORDER_N && rc == 0; ++k) {
            gp_mem_t t = vx_order_recv_mem(k);
            rc = c->irecv(c->ctx, (char *)v->buf[t][1] + (size_t)k * stride, size, tag,
                          &rq[k]);
        }
        if (!unexpected && rc == 0) {
            rc = c->send(c->ctx, &marker, 0, mtag);
        }
    }
    if (rc != 0) {
        vx_transport_fail(v, phase, "post", size);
        return -1;
    }
    for (int k = 0; k < VX_ORDER_N; ++k) {
        if (c->wait(c->ctx, rq[k]) != 0 && rc == 0) {
            rc = -1;
        }
    }
    if (rc != 0) {
        vx_transport_fail(v, phase, "wait", size);
        return -1;
    }
    for (int k = 0; k < VX_ORDER_N && side == 1; ++k) {
        gp_mem_t t = vx_order_recv_mem(k);
        vx_check(v, phase, t, (char *)v->buf[t][1] + (size_t)k * stride, 0, size,
                 base + (uint64_t)k);
    }
    return 0;
}

/* free and re-allocate both buffers before every message */
static int vx_realloc_phase(vx_t *v, const char *phase, long *allocs, long *repeats)
{
    const gp_mem_t t = v->o.mem;
    size_t pick[] = {1, 4097, 65536, 1 << 20, v->o.max};
    void *sb = NULL, *rb = NULL;
    for (size_t i = 0; i < sizeof(pick) / sizeof(pick[0]); ++i) {
        size_t size = pick[i] < v->o.max ? pick[i] : v->o.max;
        size_t len = size + VX_MAX_OFF + VX_GUARD;
        for (int round = 0; round < 4; ++round) {
            void *old_s = sb, *old_r = rb;
            if (sb) {
                gp_mem_free(t, sb);
            }
            if (rb) {
                gp_mem_free(t, rb);
            }
            /* same order as before, so an allocator that reuses returns the
             * same addresses: that is the case under test */
            sb = gp_mem_alloc(t, len);
            rb = gp_mem_alloc(t, len);
            if (sb == NULL || rb == NULL) {
                vx_transport_fail(v, phase, "alloc", size);
                return -1;
            }
            if (round > 0) {
                *allocs += 2;
                *repeats += (sb == old_s) + (rb == old_r);
            }
            if (vx_exchange(v, phase, t, sb, rb, size, (size_t)round % 2) != 0) {
                return -1;
            }
        }
        /* the next size starts from fresh allocations of another length */
        gp_mem_free(t, sb);
        gp_mem_free(t, rb);
        sb = rb = NULL;
    }
    return 0;
}

static int vx_phase_end(vx_t *v, const char *phase, long checks0, long fails0,
                        const char *extra)
{
    vx_comm_t *c = v->c;
    long checks = c->sum(c->ctx, v->checks - checks0);
    long fails = c->sum(c->ctx, v->fails - fails0);
    if (c->rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
        printf("%s: phase %-22s %6ld checks, %ld failed (%.2f s)%s\n", v->prog,
               phase, checks, fails, v->t_phase > 0 ? now - v->t_phase : 0.0,
               extra ? extra : "");
        v->t_phase = now;
        fflush(stdout);
    }
    return c->barrier(c->ctx);
}

long vx_run(vx_t *v, vx_comm_t *c)
{
    v->c = c;
    const gp_mem_t m = v->o.mem;
    long c0, f0;
    int err = 0;
    char extra[160];
    {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v->t_phase = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
    if (c->rank == 0) {
        printf("%s: %zu sizes 0..%zu B, buffers %s\n", v->prog, v->nsizes,
               v->o.max, gp_mem_name(m));
        fflush(stdout);
    }

    c0 = v->checks, f0 = v->fails;
    for (int sender = 0; sender < 2 && !err; ++sender) {
        for (size_t i = 0; i < v->nsizes && !err; ++i) {
            err = vx_one_way(v, "send-recv", sender, m, m, v->sizes[i], 0);
        }
    }
    err |= vx_phase_end(v, "send-recv", c0, f0, NULL);

    static const size_t offs[] = {1, 3, 7};
    for (size_t k = 0; k < 3 && !err; ++k) {
        char name[32];
        snprintf(name, sizeof(name), "isend-irecv+%zu", offs[k]);
        c0 = v->checks, f0 = v->fails;
        for (size_t i = 0; i < v->nsizes && !err; ++i) {
            err = vx_exchange(v, name, m, v->buf[m][0], v->buf[m][1], v->sizes[i],
                              offs[k]);
        }
        err |= vx_phase_end(v, name, c0, f0, NULL);
    }

    c0 = v->checks, f0 = v->fails;
    for (size_t i = 0; i < v->nsizes && !err; ++i) {
        if (v->sizes[i] + VX_GUARD <= v->slot_cap) {
            err = vx_window(v, "window64", v->sizes[i]);
        }
    }
    err |= vx_phase_end(v, "window64", c0, f0, NULL);

    if (m == GP_MEM_CUDA && !err) {
        static const gp_mem_t mix[2][2] = {{GP_MEM_CUDA, GP_MEM_HOST},
                                           {GP_MEM_HOST, GP_MEM_CUDA}};
        for (int k = 0; k < 2 && !err; ++k) {
            const char *name = k == 0 ? "mix-D->H" : "mix-H->D";
            c0 = v->checks, f0 = v->fails;
            for (int sender = 0; sender < 2 && !err; ++sender) {
                for (size_t i = 0; i < v->nsizes && !err; ++i) {
                    err = vx_one_way(v, name, sender, mix[k][0], mix[k][1],
                                     v->sizes[i], (i % 2) ? 3 : 0);
                }
            }
            err |= vx_phase_end(v, name, c0, f0, NULL);
        }
    }

    for (int unexpected = 1; unexpected >= 0 && m == GP_MEM_CUDA && !err; --unexpected) {
        const char *name = unexpected ? "order-unexpected" : "order-expected";
        c0 = v->checks, f0 = v->fails;
        for (int sender = 0; sender < 2 && !err; ++sender) {
            for (size_t i = 0; i < v->nsizes && !err; ++i) {
                size_t size = v->sizes[i];
                if (size <= VX_ORDER_MAX && VX_ORDER_N * (size + VX_GUARD) <= v->cap) {
                    err = vx_order(v, name, sender, size, unexpected);
                }
            }
        }
        err |= vx_phase_end(v, name, c0, f0, NULL);
    }

    if (v->o.realloc_phase && !err) {
        long allocs = 0, repeats = 0;
        c0 = v->checks, f0 = v->fails;
        err = vx_realloc_phase(v, "realloc", &allocs, &repeats);
        allocs = c->sum(c->ctx, allocs);
        repeats = c->sum(c->ctx, repeats);
        snprintf(extra, sizeof(extra), " (%ld of %ld re-allocations returned the "
                 "previous address)", repeats, allocs);
        err |= vx_phase_end(v, "realloc", c0, f0, extra);
    }

    long checks = c->sum(c->ctx, v->checks), fails = c->sum(c->ctx, v->fails);
    if (c->rank == 0) {
        printf("%s: %ld checks passed, %ld failed%s\n", v->prog, checks - fails,
               fails, err ? " (stopped early: transport error)" : "");
        fflush(stdout);
    }
    return err ? (fails ? fails : -1) : fails;
}
