/* rdma_ucp_test: the plugin's RDMA transport (gdrpipe_rdma) under raw UCP in
 * ONE process: two workers of one context connected to each other over the
 * test-only fake fabric (GDRPIPE_TEST_RDMA_FAKE=y), tcp carrying UCP's active
 * messages and wireup. Runs tag send/recv (rendezvous over the RDMA lane) and
 * put/get with data verification, then checks from the core's counters
 * (gp_rdma_get_stats, exported by the plugin) that the bytes went over the
 * RDMA wire by the expected path.
 *   --cuda             buffers are device memory (CUDA simulator)
 *   --expect PATH      direct | staged | dmabuf (direct with dma-buf MRs)
 *   --fault            GDRPIPE_TEST_RDMA_FAKE_FAIL_AFTER must make a put fail:
 *                      UCP reports an error (request or endpoint), no crash
 *   --max N            largest message (default 4 MiB)
 *   --workers N        N workers connected all-to-all (N*(N-1) endpoints),
 *                      one rendezvous message over each (default 2)
 *   --expect-flush     cuFlushGPUDirectRDMAWrites ran (direct gets into local,
 *                      or direct puts into remote, device memory)
 *   --expect-split S:L a tag message of S bytes goes direct only and one of L
 *                      bytes staged (RDMA_THRESH=auto: the measured crossover
 *                      of the fake fabric lies between them); sizes take k/m
 *   --expect-stored D  this run measured the crossover (RDMA_THRESH=auto,
 *                      RDMA_CALIBRATE=force) and stored it in directory D: a
 *                      crossover-*.txt of wire kind rdma written since the
 *                      start (a fallback stores nothing)
 *   --no-rma           tag send/recv only (UCX 1.13's protocols v1 hand
 *                      device pointers to put_short: RMA on device memory
 *                      needs UCX_PROTO_ENABLE=y there) */
#include "devmem.h"

#include <ucp/api/ucp.h>

#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    uint64_t direct, staged, fallbacks, errors;
    uint64_t cuda_flushes;
    uint64_t fake_ops, fake_bytes, fake_dmabuf_regs;
    uint64_t live_eps, fake_live_mrs;
} stats_t; /* = gp_rdma_stats_t (include/gdrpipe/capi_rdma.h) */

static ucp_context_h g_ctx;
#define MAX_WORKERS 8
static ucp_worker_h g_w[MAX_WORKERS];
static ucp_ep_h g_ep[MAX_WORKERS][MAX_WORKERS]; /* [from][to] */
static int g_nw = 2;
static int g_cuda, g_fault, g_ep_errors, g_no_rma, g_expect_flush;
static size_t g_max = 4u << 20;

#define CHECK(_c, ...) do { if (!(_c)) { fprintf(stderr, "rdma_ucp_test: FAIL: " __VA_ARGS__); \
                                         fprintf(stderr, "\n"); exit(1); } } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void progress(void)
{
    for (int i = 0; i < g_nw; ++i) {
        ucp_worker_progress(g_w[i]);
    }
}

static ucs_status_t wait_req(void *r)
{
    double t0 = now();
    ucs_status_t st;

    if (r == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(r)) {
        return UCS_PTR_STATUS(r);
    }
    while ((st = ucp_request_check_status(r)) == UCS_INPROGRESS) {
        progress();
        CHECK(now() - t0 < 60, "request timed out");
    }
    ucp_request_free(r);
    return st;
}

static void ep_err(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    fprintf(stderr, "rdma_ucp_test: endpoint %p error: %s\n", (void*)ep,
            ucs_status_string(status));
    ++g_ep_errors;
}

static void *buf_alloc(size_t len)
{
    void *p = g_cuda ? gp_devmem_alloc(len) : malloc(len);
    CHECK(p != NULL, "allocation of %zu bytes", len);
    return p;
}

static void buf_free(void *p)
{
    if (g_cuda) gp_devmem_free(p); else free(p);
}

static void buf_fill(void *p, size_t len, unsigned seed)
{
    uint8_t *h = malloc(len);
    for (size_t i = 0; i < len; ++i) h[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
    if (g_cuda) CHECK(gp_devmem_htod(p, h, len) == 0, "htod"); else memcpy(p, h, len);
    free(h);
}

static void buf_verify(const void *p, size_t len, unsigned seed, const char *what)
{
    uint8_t *h = malloc(len);
    if (g_cuda) CHECK(gp_devmem_dtoh(h, p, len) == 0, "dtoh"); else memcpy(h, p, len);
    for (size_t i = 0; i < len; ++i) {
        CHECK(h[i] == (uint8_t)(i * 131 + seed * 7 + (i >> 12)),
              "%s of %zu bytes: byte %zu is %u", what, len, i, h[i]);
    }
    free(h);
}

/* every worker to every other one: g_nw * (g_nw - 1) endpoints */
static void connect_workers(int err_mode)
{
    ucp_address_t *addr[MAX_WORKERS];
    size_t alen[MAX_WORKERS];
    int i, j;

    for (i = 0; i < g_nw; ++i) {
        CHECK(ucp_worker_get_address(g_w[i], &addr[i], &alen[i]) == UCS_OK, "address");
    }
    for (i = 0; i < g_nw; ++i) {
        for (j = 0; j < g_nw; ++j) {
            ucp_ep_params_t p = {
                .field_mask  = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                               UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                               UCP_EP_PARAM_FIELD_ERR_HANDLER,
                .address     = addr[j],
                .err_mode    = err_mode ? UCP_ERR_HANDLING_MODE_PEER :
                                          UCP_ERR_HANDLING_MODE_NONE,
                .err_handler = {.cb = ep_err, .arg = NULL}
            };
            if (i != j) {
                CHECK(ucp_ep_create(g_w[i], &p, &g_ep[i][j]) == UCS_OK, "ep_create");
            }
        }
    }
    for (i = 0; i < g_nw; ++i) {
        ucp_worker_release_address(g_w[i], addr[i]);
    }
}

static void tag_round(int from, int to, size_t len, unsigned seed)
{
    void *src = buf_alloc(len), *dst = buf_alloc(len);
    ucp_request_param_t sp = {0}, rp = {0};
    void *rr, *sr;

    buf_fill(src, len, seed);
    if (g_cuda) gp_devmem_memset(dst, 0, len); else memset(dst, 0, len);
    rr = ucp_tag_recv_nbx(g_w[to], dst, len, seed, (ucp_tag_t)-1, &rp);
    sr = ucp_tag_send_nbx(g_ep[from][to], src, len, seed, &sp);
    CHECK(wait_req(sr) == UCS_OK, "tag send %zu", len);
    CHECK(wait_req(rr) == UCS_OK, "tag recv %zu", len);
    buf_verify(dst, len, seed, "tag send/recv");
    buf_free(src);
    buf_free(dst);
}

typedef struct {
    ucp_mem_h memh;
    ucp_rkey_h rkey;
    void *buf;
} remote_t;

static void remote_map(remote_t *r, size_t len, int owner)
{
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
    };
    void *packed;
    size_t plen;

    r->buf     = buf_alloc(len);
    mp.address = r->buf;
    mp.length  = len;
    CHECK(ucp_mem_map(g_ctx, &mp, &r->memh) == UCS_OK, "mem_map");
    CHECK(ucp_rkey_pack(g_ctx, r->memh, &packed, &plen) == UCS_OK, "rkey_pack");
    CHECK(ucp_ep_rkey_unpack(g_ep[1 - owner][owner], packed, &r->rkey) == UCS_OK,
          "rkey_unpack");
    ucp_rkey_buffer_release(packed);
}

static void remote_unmap(remote_t *r)
{
    ucp_rkey_destroy(r->rkey);
    ucp_mem_unmap(g_ctx, r->memh);
    buf_free(r->buf);
}

static ucs_status_t flush_ep(int i)
{
    ucp_request_param_t p = {0};
    return wait_req(ucp_ep_flush_nbx(g_ep[i][1 - i], &p));
}

static void rma_round(size_t len, unsigned seed)
{
    ucp_request_param_t p = {0};
    remote_t r;
    void *local = buf_alloc(len);

    remote_map(&r, len, 1);
    buf_fill(local, len, seed);
    CHECK(wait_req(ucp_put_nbx(g_ep[0][1], local, len, (uintptr_t)r.buf, r.rkey, &p)) == UCS_OK,
          "put %zu", len);
    CHECK(flush_ep(0) == UCS_OK, "flush after put");
    buf_verify(r.buf, len, seed, "put");

    buf_fill(r.buf, len, seed + 1);
    if (g_cuda) gp_devmem_memset(local, 0, len); else memset(local, 0, len);
    CHECK(wait_req(ucp_get_nbx(g_ep[0][1], local, len, (uintptr_t)r.buf, r.rkey, &p)) == UCS_OK,
          "get %zu", len);
    CHECK(flush_ep(0) == UCS_OK, "flush after get");
    buf_verify(local, len, seed + 1, "get");
    remote_unmap(&r);
    buf_free(local);
}

static void fault_test(void)
{
    ucp_request_param_t p = {0};
    size_t len = 256 * 1024;
    void *local = buf_alloc(len);
    ucs_status_t st = UCS_OK;
    double t0 = now();
    remote_t r;
    int i;

    remote_map(&r, len, 1);
    buf_fill(local, len, 3);
    for (i = 0; (i < 64) && (st == UCS_OK) && (g_ep_errors == 0); ++i) {
        st = wait_req(ucp_put_nbx(g_ep[0][1], local, len, (uintptr_t)r.buf, r.rkey, &p));
        if (st == UCS_OK) {
            st = flush_ep(0);
        }
    }
    while ((g_ep_errors == 0) && (now() - t0 < 10)) {
        progress();
    }
    printf("rdma_ucp_test: fault: request status %s after %d puts, %d endpoint errors\n",
           ucs_status_string(st), i, g_ep_errors);
    CHECK((st != UCS_OK) || (g_ep_errors > 0), "the forced QP error was not reported");
    CHECK(g_ep_errors > 0, "UCP's endpoint error handler did not run");
    ucp_rkey_destroy(r.rkey);
    ucp_mem_unmap(g_ctx, r.memh);
    buf_free(r.buf);
    buf_free(local);
}

static void close_eps(void)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags        = UCP_EP_CLOSE_FLAG_FORCE};
    void *r[MAX_WORKERS * MAX_WORKERS];
    int i, j, n = 0;

    for (i = 0; i < g_nw; ++i) {
        for (j = 0; j < g_nw; ++j) {
            if (i != j) {
                r[n++] = ucp_ep_close_nbx(g_ep[i][j], &p);
            }
        }
    }
    for (i = 0; i < n; ++i) {
        (void)wait_req(r[i]);
    }
}

static size_t parse_size(const char *s, char **end)
{
    size_t v = strtoull(s, end, 0);

    if (**end == 'K' || **end == 'k') { v <<= 10; ++*end; }
    else if (**end == 'M' || **end == 'm') { v <<= 20; ++*end; }
    return v;
}

/* --expect-split: the first device-memory transfer measures the crossover
 * (or reads it from the cache); a message below it moves direct only, one
 * above it staged. */
static void split_check(void (*get_stats)(stats_t *), size_t small, size_t large, unsigned *seed)
{
    stats_t a, b, c;

    get_stats(&a);
    tag_round(0, 1, small, (*seed)++);
    get_stats(&b);
    printf("rdma_ucp_test: %zu bytes: direct +%llu staged +%llu\n", small,
           (unsigned long long)(b.direct - a.direct), (unsigned long long)(b.staged - a.staged));
    CHECK(b.direct > a.direct && b.staged == a.staged,
          "%zu-byte message: expected direct only (direct +%llu, staged +%llu)", small,
          (unsigned long long)(b.direct - a.direct), (unsigned long long)(b.staged - a.staged));
    tag_round(0, 1, large, (*seed)++);
    get_stats(&c);
    printf("rdma_ucp_test: %zu bytes: direct +%llu staged +%llu\n", large,
           (unsigned long long)(c.direct - b.direct), (unsigned long long)(c.staged - b.staged));
    CHECK(c.staged > b.staged, "%zu-byte message: expected staged (staged +%llu)", large,
          (unsigned long long)(c.staged - b.staged));
}

/* --expect-stored: a cache entry of the RDMA wire written at or after t0 */
static int stored_since(const char *dir, time_t t0)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;

    if (d == NULL) return 0;
    while (!found && (e = readdir(d)) != NULL) {
        char path[4096], line[256];
        struct stat st;
        FILE *f;

        if (strncmp(e->d_name, "crossover-", 10) != 0) continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || st.st_mtime < t0) continue;
        f = fopen(path, "r");
        if (f == NULL) continue;
        while (fgets(line, sizeof(line), f) != NULL) {
            if (!strcmp(line, "key.wire_kind rdma\n")) found = 1;
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    const char *stored_dir = NULL;
    const time_t t0 = time(NULL);
    size_t split_small = 0, split_large = 0;
    const char *expect = NULL;
    void (*get_stats)(stats_t *);
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA
    };
    ucp_worker_params_t wp = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE
    };
    stats_t s;
    size_t len;
    unsigned seed = 1;
    int i;

    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--cuda")) g_cuda = 1;
        else if (!strcmp(argv[i], "--fault")) g_fault = 1;
        else if (!strcmp(argv[i], "--no-rma")) g_no_rma = 1;
        else if (!strcmp(argv[i], "--expect-flush")) g_expect_flush = 1;
        else if (!strcmp(argv[i], "--expect") && i + 1 < argc) expect = argv[++i];
        else if (!strcmp(argv[i], "--expect-stored") && i + 1 < argc) stored_dir = argv[++i];
        else if (!strcmp(argv[i], "--expect-split") && i + 1 < argc) {
            char *end;
            split_small = parse_size(argv[++i], &end);
            CHECK(*end == ':', "--expect-split SMALL:LARGE");
            split_large = parse_size(end + 1, &end);
            CHECK(*end == '\0' && split_small > 0 && split_small < split_large,
                  "--expect-split SMALL:LARGE");
        }
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            char *end;
            g_max = strtoull(argv[++i], &end, 0);
            g_max <<= (*end == 'K' || *end == 'k') ? 10 : (*end == 'M' || *end == 'm') ? 20 : 0;
        }
        else if (!strcmp(argv[i], "--workers") && i + 1 < argc) g_nw = atoi(argv[++i]);
        else { fprintf(stderr, "usage: %s [--cuda] [--fault] [--expect direct|staged|dmabuf] [--expect-split S:L] [--max N]\n", argv[0]); return 2; }
    }
    get_stats = (void (*)(stats_t *))dlsym(RTLD_DEFAULT, "gp_rdma_get_stats");
    CHECK(get_stats != NULL, "gp_rdma_get_stats not found: is the plugin preloaded?");
    if (g_cuda) CHECK(gp_devmem_init(0, 0) == 0, "CUDA (simulator) init");

    CHECK(ucp_init(&params, NULL, &g_ctx) == UCS_OK, "ucp_init");
    CHECK(g_nw >= 2 && g_nw <= MAX_WORKERS, "--workers 2..%d", MAX_WORKERS);
    for (i = 0; i < g_nw; ++i) {
        CHECK(ucp_worker_create(g_ctx, &wp, &g_w[i]) == UCS_OK, "worker");
    }
    connect_workers(g_fault);
    tag_round(0, 1, 8, seed++); /* wireup */
    if (split_large != 0) {
        split_check(get_stats, split_small, split_large, &seed);
    }
    if (!g_fault && g_nw > 2) {
        /* every endpoint carries a rendezvous message over its own QP */
        for (i = 0; i < g_nw; ++i) {
            for (int j = 0; j < g_nw; ++j) {
                if (i != j) {
                    tag_round(i, j, 300000 + i * 16 + j, seed++);
                }
            }
        }
    }

    if (g_fault) {
        fault_test();
    } else {
        for (len = 1; len <= g_max; len = (len < 4096) ? len * 16 : len * 4) {
            tag_round(0, 1, len, seed++);
            tag_round(1, 0, len + 3, seed++);
            if (!g_no_rma) rma_round(len, seed++);
        }
    }
    get_stats(&s);
    printf("rdma_ucp_test: rdma transfers direct %llu staged %llu fallbacks %llu errors %llu; "
           "fake fabric ops %llu bytes %llu dma-buf MRs %llu; RDMA write flushes %llu\n",
           (unsigned long long)s.direct, (unsigned long long)s.staged,
           (unsigned long long)s.fallbacks, (unsigned long long)s.errors,
           (unsigned long long)s.fake_ops, (unsigned long long)s.fake_bytes,
           (unsigned long long)s.fake_dmabuf_regs, (unsigned long long)s.cuda_flushes);
    CHECK(s.fake_ops > 0 && s.direct + s.staged > 0, "nothing went over the RDMA transport");
    if (!g_fault) {
        CHECK(s.errors == 0, "%llu RDMA transfers failed", (unsigned long long)s.errors);
        CHECK(s.fake_bytes >= g_max, "fewer bytes on the fabric (%llu) than one message",
              (unsigned long long)s.fake_bytes);
    }
    if (expect != NULL && !strcmp(expect, "staged")) {
        CHECK(s.staged > 0, "no staged transfer");
        CHECK(!g_cuda || s.direct > 0 || s.cuda_flushes == 0,
              "RDMA write flushes without direct transfers");
    } else if (expect != NULL && !strcmp(expect, "direct")) {
        CHECK(s.direct > 0 && s.staged == 0, "expected direct transfers only");
    } else if (expect != NULL && !strcmp(expect, "dmabuf")) {
        CHECK(s.direct > 0 && s.fake_dmabuf_regs > 0, "expected dma-buf registrations");
    }
    if (g_nw > 2) {
        CHECK(s.live_eps >= (uint64_t)(g_nw * (g_nw - 1)), "%llu RDMA endpoints for %d workers",
              (unsigned long long)s.live_eps, g_nw);
        CHECK(s.direct + s.staged >= (uint64_t)(g_nw * (g_nw - 1)),
              "fewer RDMA transfers than endpoints");
    }
    if (stored_dir != NULL) {
        CHECK(stored_since(stored_dir, t0), "no crossover of the RDMA wire stored in %s by this run "
              "(calibration failed or did not run)", stored_dir);
    }
    if (g_expect_flush) {
        CHECK(s.cuda_flushes > 0, "no cuFlushGPUDirectRDMAWrites after direct RDMA into device memory");
    }
    close_eps();
    for (i = 0; i < g_nw; ++i) {
        ucp_worker_destroy(g_w[i]);
    }
    ucp_cleanup(g_ctx);
    /* every endpoint, registration and bounce buffer went with UCX's objects */
    get_stats(&s);
    printf("rdma_ucp_test: after cleanup: %llu endpoints, %llu MRs on the fabric\n",
           (unsigned long long)s.live_eps, (unsigned long long)s.fake_live_mrs);
    CHECK(s.live_eps == 0 && s.fake_live_mrs == 0, "RDMA resources left after ucp_cleanup");
    if (g_cuda) gp_devmem_fini();
    printf("rdma_ucp_test: OK\n");
    return 0;
}
