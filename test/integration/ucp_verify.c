/* ucp_verify: the verify_core schedule over raw UCP between two processes
 * (fork + socketpair to exchange worker addresses), with ucp_tag_send_nbx /
 * ucp_tag_recv_nbx and no memory-type hint, as Open MPI does.
 * UCX_PROTO_ENABLE is left to the environment.
 *   --kill-peer      the child is SIGKILLed in the middle of large transfers;
 *                    the parent (endpoint in UCP_ERR_HANDLING_MODE_PEER) must
 *                    see an error within --timeout seconds (default 10), then
 *                    after ucp_cleanup have a working CUDA context and its
 *                    resources back (res_check.h)
 *   --kill-sender    the same, the child being the sender of those transfers
 *   --free-in-flight buffers freed (cuMemFree) while their send / receive is
 *                    in flight; nothing may hang or crash, and the next
 *                    transfer must arrive intact
 *   --memtest-crash  regression of shared/notes/ucx-1.13-plugin.md section 2:
 *                    a host message first, then small device-buffer sends on
 *                    the inline path (to the peer and to itself). -d cuda.
 *   --cycles N       N times in one process: ucp_init, worker, endpoint, the
 *                    schedule (buffers allocated after init, freed after
 *                    cleanup), ucp_cleanup; after each cleanup fds, threads,
 *                    memfd/shm mappings, /dev/shm and the simulator's live
 *                    objects must be back at the value before the first
 *                    ucp_init (res_check.h). */
#include "devmem.h"
#include "ucpx.h"
#include "res_check.h"
#include "verify_core.h"

#include <sched.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define OP_TIMEOUT 120.0

static int g_kill_peer, g_memtest, g_cycles, g_free_in_flight;
static unsigned g_free_by = 7; /* bits of the sides that free: sender, receiver, both */
static double g_timeout = 10.0;
static double g_kill_delay = 0.002; /* how long the child progresses before it dies */
static pid_t g_child = -1;

typedef struct {
    gp_ucp_t u;
    int fd;
    int rank;
} side_t;

typedef struct {
    ucs_status_ptr_t r;
    int is_recv;
    size_t expect;
    size_t got;
} u_req_t;

static int u_send(void *ctx, const void *buf, size_t len, uint32_t tag)
{
    side_t *s = ctx;
    return gp_ucp_send(&s->u, buf, len, tag, OP_TIMEOUT) != UCS_OK;
}

static int u_recv(void *ctx, void *buf, size_t len, uint32_t tag)
{
    side_t *s = ctx;
    size_t got = ~(size_t)0;
    ucs_status_t st = gp_ucp_recv(&s->u, buf, len, tag, &got, OP_TIMEOUT);
    if (st != UCS_OK || got != len) {
        fprintf(stderr, "ucp_verify: rank %d: recv %zu: %s, got %zu bytes\n",
                s->rank, len, ucs_status_string(st), got);
        return -1;
    }
    return 0;
}

static int u_post(side_t *s, void *buf, size_t len, uint32_t tag, void **req,
                  int is_recv)
{
    u_req_t *q = calloc(1, sizeof(*q));
    if (q == NULL) {
        return -1;
    }
    q->is_recv = is_recv;
    q->expect = len;
    q->got = ~(size_t)0;
    q->r = is_recv ? gp_ucp_irecv(&s->u, buf, len, tag, &q->got)
                   : gp_ucp_isend(&s->u, buf, len, tag);
    if (UCS_PTR_IS_ERR(q->r)) {
        fprintf(stderr, "ucp_verify: post: %s\n",
                ucs_status_string(UCS_PTR_STATUS(q->r)));
        free(q);
        return -1;
    }
    *req = q;
    return 0;
}

static int u_isend(void *ctx, const void *buf, size_t len, uint32_t tag, void **req)
{
    return u_post(ctx, (void *)buf, len, tag, req, 0);
}

static int u_irecv(void *ctx, void *buf, size_t len, uint32_t tag, void **req)
{
    return u_post(ctx, buf, len, tag, req, 1);
}

static int u_wait(void *ctx, void *req)
{
    side_t *s = ctx;
    u_req_t *q = req;
    ucs_status_t st = gp_ucp_wait(&s->u, q->r, q->is_recv, &q->got, OP_TIMEOUT);
    int rc = st != UCS_OK || (q->is_recv && q->got != q->expect);
    if (rc) {
        fprintf(stderr, "ucp_verify: rank %d: %s %zu: %s (got %zu)\n", s->rank,
                q->is_recv ? "recv" : "send", q->expect, ucs_status_string(st),
                q->got);
    }
    if (st == UCS_ERR_TIMED_OUT) {
        gp_ucp_cancel(&s->u, q->r);
    }
    free(q);
    return rc ? -1 : 0;
}

/* The socket exchanges progress the worker while they wait: a side whose
 * own requests are done may still owe the peer protocol messages (ucpx.h). */
static int u_barrier(void *ctx)
{
    side_t *s = ctx;
    return gp_fd_barrier_progress(s->fd, &s->u, 1);
}

static long u_sum(void *ctx, long v)
{
    side_t *s = ctx;
    long peer = 0;
    if (gp_fd_exchange_progress(s->fd, &s->u, 1, &v, &peer, sizeof(v)) != 0) {
        fprintf(stderr, "ucp_verify: rank %d: peer gone\n", s->rank);
        _exit(2);
    }
    return v + peer;
}

static void u_abort(void *ctx)
{
    side_t *s = ctx;
    if (s->rank == 0 && g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
    }
    _exit(2);
}

static int extra_opt(int opt, const char *arg)
{
    switch (opt) {
    case 'K': g_kill_peer = 1; return 0;
    case 'S': g_kill_peer = 2; return 0;
    case 'D': g_kill_delay = atof(arg) * 1e-6; return g_kill_delay >= 0 ? 0 : -1;
    case 'M': g_memtest = 1; return 0;
    case 'F': g_free_in_flight = 1; return 0;
    case 'B':
        g_free_by = strcmp(arg, "sender") == 0 ? 1 : strcmp(arg, "receiver") == 0 ? 2
                  : strcmp(arg, "both") == 0 ? 4 : 0;
        return g_free_by != 0 ? 0 : -1;
    case 'T': g_timeout = atof(arg); return g_timeout > 0 ? 0 : -1;
    case 'C': g_cycles = atoi(arg); return g_cycles > 0 ? 0 : -1;
    default: return -1;
    }
}

static const char *const g_usage =
    "  --kill-peer           SIGKILL the child during large transfers to it; pass\n"
    "                        if the parent gets an error within --timeout, and\n"
    "                        after cleanup its CUDA context works and its\n"
    "                        resources are back where they were\n"
    "  --kill-sender         the same with the child sending them\n"
    "  --kill-delay US       how long the child progresses its transfers before\n"
    "                        it dies (default 2000 us)\n"
    "  --timeout S           bound for --kill-peer/--kill-sender (default 10 s)\n"
    "  --memtest-crash       host message, then small device sends (-d cuda)\n"
    "  --free-in-flight      buffers freed while their transfers are in flight\n"
    "                        (both sides); pass if nothing hangs or crashes and\n"
    "                        the next transfer arrives intact\n"
    "  --free-by WHO         only the rounds where WHO frees: sender, receiver\n"
    "                        or both (default: each in turn)\n"
    "  --cycles N            N x (ucp_init .. schedule .. ucp_cleanup) in one\n"
    "                        process; after each cleanup fds, threads, memfd/shm\n"
    "                        mappings, /dev/shm and the simulator's live objects\n"
    "                        must be back at their value before the first init\n";

/* ------------------------------------------------------------ kill-peer -- */
/* The parent survives, the child is SIGKILLed in the middle of large
 * transfers: as their receiver (--kill-peer) or as their sender
 * (--kill-sender). The parent must see the endpoint error within --timeout
 * with no request left hanging (receives the dead peer never matched are
 * cancelled, as an application would); then, after ucp_cleanup, its CUDA
 * context must still work and its resources (fds, memfd and /dev/shm
 * mappings, the simulator's imports and allocations) be back where they
 * were before ucp_init: the dead peer's FIFO, staging segment and imports
 * closed. */
static gp_res_t g_kill_base; /* the parent's resources before ucp_init */

/* reaps the child (or kills it at the bound), progressing meanwhile */
static double kill_wait_child(side_t *s)
{
    const double t0 = gp_now();
    int status = 0, reaped = 0;
    while (!reaped && gp_now() - t0 < g_timeout) {
        ucp_worker_progress(s->u.worker);
        reaped = waitpid(g_child, &status, WNOHANG) == g_child;
    }
    if (!reaped) {
        kill(g_child, SIGKILL);
        waitpid(g_child, &status, 0);
    }
    printf("ucp_verify: child %s after %.1f ms\n",
           WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? "SIGKILLed" : "ended",
           (gp_now() - t0) * 1e3);
    return gp_now();
}

/* ok / error / still in progress among the requests */
static void kill_count(ucs_status_ptr_t *r, int n, int *ok, int *err, int *pending)
{
    *ok = *err = *pending = 0;
    for (int i = 0; i < n; ++i) {
        ucs_status_t st = r[i] == NULL            ? UCS_OK
                          : UCS_PTR_IS_ERR(r[i]) ? UCS_PTR_STATUS(r[i])
                                                 : ucp_request_check_status(r[i]);
        *ok += st == UCS_OK;
        *err += st != UCS_OK && st != UCS_INPROGRESS;
        *pending += st == UCS_INPROGRESS;
    }
}

/* after ucp_cleanup: the CUDA context works, the resources are back */
static int kill_after_cleanup(vx_t *v)
{
    int bad = 0;
    if (v->o.mem == GP_MEM_CUDA) {
        const size_t n = (size_t)1 << 20;
        void *d = gp_mem_alloc(v->o.mem, n);
        gp_mem_diff_t diff;
        bad = d == NULL || gp_mem_fill(v->o.mem, d, n, 77) != 0 ||
              gp_mem_verify(v->o.mem, d, n, 77, &diff) != 0;
        gp_mem_free(v->o.mem, d);
        printf("ucp_verify: kill-peer: CUDA context after cleanup: %s\n",
               bad ? "FAILED (allocation, fill or read back)" : "works");
    }
    gp_res_t now;
    int diff = gp_res_take(&now) != 0 ? 1
                                      : gp_res_diff(&g_kill_base, &now, "ucp_verify: survivor");
    printf("ucp_verify: kill-peer: survivor's resources after cleanup: %s\n",
           diff ? "NOT back to the baseline (above)" : "back to the baseline");
    return bad || diff;
}

static int kill_peer_parent(side_t *s, vx_t *v)
{
    const size_t len = v->o.max;
    const int sender_dies = g_kill_peer == 2;
    enum { NOPS = 4 };
    ucs_status_ptr_t r[NOPS + 2];
    int nreq = 0, ok = 0, err = 0, pending = 0, cancelled = 0;
    char c;
    void *buf = gp_mem_alloc(v->o.mem, len);
    if (buf == NULL || gp_mem_fill(v->o.mem, buf, len, 1) != 0) {
        return 1;
    }
    /* one complete message first: the connection works */
    ucs_status_t first = sender_dies ? gp_ucp_recv(&s->u, buf, len, 1, NULL, OP_TIMEOUT)
                                     : gp_ucp_send(&s->u, buf, len, 1, OP_TIMEOUT);
    if (first != UCS_OK) {
        fprintf(stderr, "ucp_verify: first message failed\n");
        return 1;
    }
    for (int i = 0; i < NOPS; ++i) {
        r[nreq++] = sender_dies ? gp_ucp_irecv(&s->u, buf, len, 2, NULL)
                                : gp_ucp_isend(&s->u, buf, len, 2);
    }
    /* the child says it is inside its operations, then kills itself after a
     * short while; reap it so that liveness checks see it gone */
    if (gp_fd_read(s->fd, &c, 1) != 0) {
        fprintf(stderr, "ucp_verify: child did not report\n");
    }
    const double t_dead = kill_wait_child(s);
    if (!sender_dies) {
        /* after the death: one more small and one more large send */
        r[nreq++] = gp_ucp_isend(&s->u, buf, 8, 3);
        r[nreq++] = gp_ucp_isend(&s->u, buf, len, 4);
    }
    for (;;) {
        kill_count(r, nreq, &ok, &err, &pending);
        /* sends end by themselves; receives that never matched do not */
        if (sender_dies ? s->u.ep_failed : pending == 0) {
            break;
        }
        if (gp_now() - t_dead > g_timeout) {
            break;
        }
        ucp_worker_progress(s->u.worker);
    }
    const double waited = gp_now() - t_dead;
    if (sender_dies && s->u.ep_failed) {
        /* receives the dead peer's messages never matched stay posted (a
         * receive belongs to no endpoint): cancel them, as an application
         * would; every one must then end */
        for (int i = 0; i < nreq; ++i) {
            if (UCS_PTR_IS_PTR(r[i]) && ucp_request_check_status(r[i]) == UCS_INPROGRESS) {
                ucp_request_cancel(s->u.worker, r[i]);
                ++cancelled;
            }
        }
        const double t_c = gp_now();
        do {
            ucp_worker_progress(s->u.worker);
            kill_count(r, nreq, &ok, &err, &pending);
        } while (pending != 0 && gp_now() - t_c < g_timeout);
    } else {
        kill_count(r, nreq, &ok, &err, &pending);
    }
    printf("ucp_verify: kill-%s: %d %s ok, %d with error (%d of them cancelled), %d pending "
           "after %.2f s; endpoint error callback: %s%s%s\n",
           sender_dies ? "sender" : "peer", ok, sender_dies ? "receives" : "sends", err,
           cancelled, pending, waited, s->u.ep_failed ? "yes (" : "no",
           s->u.ep_failed ? ucs_status_string(s->u.ep_status) : "",
           s->u.ep_failed ? ")" : "");
    for (int i = 0; i < nreq; ++i) {
        if (UCS_PTR_IS_PTR(r[i])) {
            if (ucp_request_check_status(r[i]) == UCS_INPROGRESS) {
                ucp_request_cancel(s->u.worker, r[i]);
            }
            ucp_request_free(r[i]);
        }
    }
    gp_ucp_close(&s->u, 1);
    gp_mem_free(v->o.mem, buf);
    int pass = sender_dies ? s->u.ep_failed && pending == 0
                           : (err > 0 || s->u.ep_failed) && pending == 0;
    printf("ucp_verify: kill-%s %s: %s within %.0f s\n", sender_dies ? "sender" : "peer",
           pass ? "passed" : "FAILED",
           pass ? "the error was reported" : "no error reported / requests hung", g_timeout);
    if (kill_after_cleanup(v) != 0) {
        pass = 0;
    }
    return pass ? 0 : 1;
}

static void kill_self(int sig)
{
    (void)sig;
    kill(getpid(), SIGKILL);
}

static int kill_peer_child(side_t *s, vx_t *v)
{
    const size_t len = v->o.max;
    const int sender_dies = g_kill_peer == 2;
    enum { NOPS = 4 };
    ucs_status_ptr_t r[NOPS];
    void *buf = gp_mem_alloc(v->o.mem, len);
    if (buf == NULL || gp_mem_fill(v->o.mem, buf, len, 2) != 0) {
        _exit(3);
    }
    ucs_status_t first = sender_dies ? gp_ucp_send(&s->u, buf, len, 1, OP_TIMEOUT)
                                     : gp_ucp_recv(&s->u, buf, len, 1, NULL, OP_TIMEOUT);
    if (first != UCS_OK) {
        _exit(3);
    }
    for (int i = 0; i < NOPS; ++i) {
        r[i] = sender_dies ? gp_ucp_isend(&s->u, buf, len, 2)
                           : gp_ucp_irecv(&s->u, buf, len, 2, NULL);
    }
    char c = 'k';
    gp_fd_write(s->fd, &c, 1);
    /* progress (the data moves), and die at --kill-delay by a timer, which
     * strikes wherever the process is: also inside a progress call that is
     * moving data */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = kill_self;
    sigaction(SIGALRM, &sa, NULL);
    const long us = (long)(g_kill_delay * 1e6);
    struct itimerval it = {.it_value = {.tv_sec = us / 1000000, .tv_usec = us % 1000000}};
    if (us == 0 || setitimer(ITIMER_REAL, &it, NULL) != 0) {
        kill_self(SIGALRM);
    }
    for (;;) {
        ucp_worker_progress(s->u.worker);
    }
    (void)r;
}

/* ------------------------------------------------------- free-in-flight -- */
/* An erroneous application frees its buffer while a transfer from or into it
 * is still in flight: the sender frees its send buffer right after the send
 * starts, the receiver its receive buffer right after the receive is posted
 * (each alone, then both), with messages of sizes that take each path. The
 * data of those transfers is undefined (MPI's and UCP's rules); gdrpipe must
 * not crash and must not corrupt anything else: every request ends within
 * OP_TIMEOUT (with any status), and a verified transfer after each round
 * arrives intact. */
static int free_in_flight(side_t *s, vx_t *v)
{
    static const size_t sizes[] = {4096, 256 << 10, 4 << 20, 16 << 20};
    static const char *const who[] = {"sender", "receiver", "both"};
    int bad = 0;
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]) && !bad; ++k) {
        for (int w = 0; w < 3 && !bad; ++w) {
            if (!(g_free_by & (1u << w))) {
                continue;
            }
            const size_t len = sizes[k] < v->o.max ? sizes[k] : v->o.max;
            const uint64_t tag = 10 + 4 * k + (uint64_t)w;
            const int frees = w == 2 || w == s->rank; /* rank 0 sends */
            void *doomed = gp_mem_alloc(v->o.mem, len);
            void *keep = gp_mem_alloc(v->o.mem, len);
            if (doomed == NULL || keep == NULL || gp_mem_fill(v->o.mem, doomed, len, 3) != 0) {
                return 1;
            }
            ucs_status_ptr_t r = s->rank == 0 ? gp_ucp_isend(&s->u, doomed, len, tag)
                                              : gp_ucp_irecv(&s->u, doomed, len, tag, NULL);
            if (frees) {
                gp_mem_free(v->o.mem, doomed); /* the error under test */
            }
            ucs_status_t st = UCS_PTR_IS_ERR(r) ? UCS_PTR_STATUS(r)
                              : r == NULL       ? UCS_OK
                                                : gp_ucp_wait(&s->u, r, s->rank == 1, NULL,
                                                              OP_TIMEOUT);
            if (st == UCS_ERR_TIMED_OUT) {
                fprintf(stderr, "ucp_verify: rank %d: transfer of a %zu B buffer freed by the "
                        "%s hung\n", s->rank, len, who[w]);
                gp_ucp_cancel(&s->u, r);
                bad = 1;
            }
            if (!frees) {
                gp_mem_free(v->o.mem, doomed);
            }
            /* then a transfer that must arrive intact */
            if (s->rank == 0) {
                bad |= gp_mem_fill(v->o.mem, keep, len, 50 + (uint32_t)tag) != 0 ||
                       gp_ucp_send(&s->u, keep, len, 100 + tag, OP_TIMEOUT) != UCS_OK;
            } else {
                gp_mem_diff_t d;
                bad |= gp_mem_set(v->o.mem, keep, 0, len) != 0 ||
                       gp_ucp_recv(&s->u, keep, len, 100 + tag, NULL, OP_TIMEOUT) != UCS_OK ||
                       gp_mem_verify(v->o.mem, keep, len, 50 + (uint32_t)tag, &d) != 0;
            }
            gp_mem_free(v->o.mem, keep);
            printf("ucp_verify: rank %d: free-in-flight %zu B, freed by the %s: freed transfer "
                   "%s, next transfer %s\n", s->rank, len, who[w], ucs_status_string(st),
                   bad ? "FAILED" : "intact");
            fflush(stdout);
        }
    }
    return bad;
}

/* -------------------------------------------------------- memtest-crash -- */
static int memtest_loopback(side_t *s)
{
    /* the same worker talks to itself (the 'self' transport in section 2) */
    ucp_address_t *addr = NULL;
    size_t alen = 0;
    ucp_ep_h self_ep = NULL;
    int bad = 0;
    if (ucp_worker_get_address(s->u.worker, &addr, &alen) != UCS_OK) {
        return 1;
    }
    ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                          .address = addr};
    ucs_status_t st = ucp_ep_create(s->u.worker, &ep, &self_ep);
    ucp_worker_release_address(s->u.worker, addr);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_verify: loopback ep: %s\n", ucs_status_string(st));
        return 1;
    }
    ucp_ep_h peer_ep = s->u.ep;
    s->u.ep = self_ep; /* gp_ucp_* send on u.ep */
    char hs[64], hr[64];
    memset(hs, 'h', sizeof(hs));
    ucs_status_ptr_t rr = gp_ucp_irecv(&s->u, hr, sizeof(hr), 100, NULL);
    st = gp_ucp_send(&s->u, hs, sizeof(hs), 100, OP_TIMEOUT);
    if (st != UCS_OK || gp_ucp_wait(&s->u, rr, 1, NULL, OP_TIMEOUT) != UCS_OK ||
        memcmp(hs, hr, sizeof(hs)) != 0) {
        fprintf(stderr, "ucp_verify: loopback host message failed\n");
        bad++;
    }
    /* device buffers allocated after the host message, sizes on the inline
     * (short) path; without and with the memory-type hint */
    for (int hint = 0; hint < 2 && !bad; ++hint) {
        for (size_t size = 1; size <= 64; size *= 4) {
            void *ds = gp_devmem_alloc(size), *dr = gp_devmem_alloc(size);
            uint32_t seed = gp_pattern_seed(size, (uint64_t)hint, 0);
            gp_mem_diff_t d;
            if (ds == NULL || dr == NULL || gp_mem_fill(GP_MEM_CUDA, ds, size, seed) ||
                gp_devmem_memset(dr, 0, size)) {
                bad++;
                break;
            }
            ucp_request_param_t p = {.op_attr_mask = 0};
            if (hint) {
                p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
                p.memory_type = UCS_MEMORY_TYPE_CUDA;
            }
            ucp_tag_recv_info_t info;
            ucp_request_param_t pr = p;
            pr.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
            pr.recv_info.tag_info = &info;
            rr = ucp_tag_recv_nbx(s->u.worker, dr, size, 200, (ucp_tag_t)-1, &pr);
            ucs_status_ptr_t sr = ucp_tag_send_nbx(self_ep, ds, size, 200, &p);
            if (gp_ucp_wait(&s->u, sr, 0, NULL, OP_TIMEOUT) != UCS_OK ||
                gp_ucp_wait(&s->u, rr, 1, NULL, OP_TIMEOUT) != UCS_OK ||
                gp_mem_verify(GP_MEM_CUDA, dr, size, seed, &d) != 0 || d.bad) {
                fprintf(stderr, "ucp_verify: loopback device message of %zu B "
                        "(%s hint) failed\n", size, hint ? "with" : "no");
                bad++;
            }
            gp_devmem_free(ds);
            gp_devmem_free(dr);
        }
    }
    s->u.ep = self_ep;
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t cr = ucp_ep_close_nbx(self_ep, &cp);
    gp_ucp_wait(&s->u, cr, 0, NULL, OP_TIMEOUT);
    s->u.ep = peer_ep;
    return bad;
}

static int memtest_crash(side_t *s)
{
    int bad = 0;
    char h[64];
    /* 1: a host message between the processes */
    memset(h, s->rank ? 0 : 'h', sizeof(h));
    ucs_status_t st = s->rank == 0 ? gp_ucp_send(&s->u, h, sizeof(h), 50, OP_TIMEOUT)
                                   : gp_ucp_recv(&s->u, h, sizeof(h), 50, NULL,
                                                 OP_TIMEOUT);
    if (st != UCS_OK || h[0] != 'h' || h[63] != 'h') {
        fprintf(stderr, "ucp_verify: rank %d: host message failed\n", s->rank);
        return 1;
    }
    /* 2: small device buffers allocated now, sent without a hint */
    for (size_t size = 1; size <= 256; size *= 2) {
        void *d = gp_devmem_alloc(size);
        uint32_t seed = gp_pattern_seed(size, 9, 0);
        gp_mem_diff_t diff;
        if (d == NULL) {
            return 1;
        }
        if (s->rank == 0) {
            bad += gp_mem_fill(GP_MEM_CUDA, d, size, seed) != 0 ||
                   gp_ucp_send(&s->u, d, size, 60, OP_TIMEOUT) != UCS_OK;
        } else {
            bad += gp_devmem_memset(d, 0, size) != 0 ||
                   gp_ucp_recv(&s->u, d, size, 60, NULL, OP_TIMEOUT) != UCS_OK ||
                   gp_mem_verify(GP_MEM_CUDA, d, size, seed, &diff) != 0 || diff.bad;
        }
        gp_devmem_free(d);
    }
    /* 3: the same inside one process (loopback, as in the notes) */
    if (s->rank == 0) {
        bad += memtest_loopback(s);
    }
    return bad;
}

/* --------------------------------------------------------------- cycles -- */
/* The program's own CUDA state (the legacy stream, the driver's staging)
 * belongs in a resource baseline: one device round trip before taking it. */
static int baseline_warm(const vx_t *v)
{
    if (v->o.mem != GP_MEM_CUDA) {
        return 0;
    }
    char c = 1;
    void *d = gp_devmem_alloc(1);
    if (d == NULL || gp_devmem_memset(d, 7, 1) || gp_devmem_dtoh(&c, d, 1) || c != 7) {
        return -1;
    }
    gp_devmem_free(d);
    return 0;
}


static int run_cycles(vx_t *v, int rank, int fd)
{
    gp_res_t base, now;
    char who[48];
    int bad = 0;
    snprintf(who, sizeof(who), "ucp_verify: rank %d", rank);
    if (baseline_warm(v) != 0) {
        return 1;
    }
    if (gp_res_take(&base) != 0) {
        fprintf(stderr, "%s: cannot read /proc\n", who);
        return 1;
    }
    if (rank == 0) {
        gp_res_print(&base, "ucp_verify: baseline of rank 0");
    }
    for (int k = 1; k <= g_cycles && !bad; ++k) {
        side_t s = {.fd = fd, .rank = rank};
        if (gp_ucp_open(&s.u) != 0 || gp_ucp_connect(&s.u, fd, 0) != 0 ||
            vx_alloc(v) != 0) {
            return 1;
        }
        vx_comm_t c = {.ctx = &s, .rank = rank, .send = u_send, .recv = u_recv,
                       .isend = u_isend, .irecv = u_irecv, .wait = u_wait,
                       .barrier = u_barrier, .sum = u_sum, .abort = u_abort};
        long rc = vx_run(v, &c) != 0;
        gp_fd_barrier_progress(fd, &s.u, 1);
        if (k == 1 && rank == 0 && gp_res_take(&now) == 0) {
            gp_res_print(&now, "ucp_verify: before cleanup, rank 0");
        }
        gp_ucp_close(&s.u, 0);
        vx_free(v);
        gp_fd_barrier(fd); /* both sides cleaned up: /dev/shm is shared */
        int diff = gp_res_take(&now) != 0 ? 1 : gp_res_diff(&base, &now, who);
        long total = u_sum(&s, rc + diff);
        if (rank == 0) {
            printf("ucp_verify: cycle %d of %d: %s\n", k, g_cycles,
                   total ? "FAILED (see above)" : "all released");
            fflush(stdout);
        }
        bad = total != 0;
    }
    if (rank == 0 && !bad) {
        gp_res_print(&now, "ucp_verify: after the last cleanup, rank 0");
    }
    return bad;
}

/* ------------------------------------------------------------------ main -- */
static int run_side(vx_t *v, int rank, int fd)
{
    side_t s = {.fd = fd, .rank = rank};
    /* a dead peer must be noticed quickly; the default interval is 20 s */
    static const char *const kp_mods[] = {"KEEPALIVE_INTERVAL", "1s", NULL};
    const int kp_env = getenv("UCX_KEEPALIVE_INTERVAL") != NULL;
    if (v->o.mem == GP_MEM_CUDA && gp_devmem_init(v->o.device, rank) != 0) {
        return 1;
    }
    if (g_cycles > 0) {
        int rc = run_cycles(v, rank, fd);
        if (v->o.mem == GP_MEM_CUDA) {
            gp_devmem_fini();
        }
        return rc;
    }
    if (v->o.alloc_before && !g_kill_peer && !g_memtest && !g_free_in_flight &&
        vx_alloc(v) != 0) {
        return 1;
    }
    if (g_kill_peer && rank == 0 &&
        (baseline_warm(v) != 0 || gp_res_take(&g_kill_base) != 0)) {
        return 1;
    }
    if (gp_ucp_open_cfg(&s.u, (g_kill_peer && !kp_env) ? kp_mods : NULL) != 0 ||
        gp_ucp_connect(&s.u, fd, g_kill_peer) != 0) {
        return 1;
    }
    if (g_kill_peer) {
        if (rank == 0) {
            printf("ucp_verify: kill-%s, %zu B %s messages, keepalive %s\n",
                   g_kill_peer == 2 ? "sender" : "peer", v->o.max, gp_mem_name(v->o.mem),
                   kp_env ? getenv("UCX_KEEPALIVE_INTERVAL") : "1s");
            fflush(stdout);
        }
        return rank == 0 ? kill_peer_parent(&s, v) : kill_peer_child(&s, v);
    }
    int rc;
    if (g_free_in_flight) {
        rc = free_in_flight(&s, v);
        long total = u_sum(&s, rc);
        if (rank == 0) {
            printf("ucp_verify: free-in-flight %s\n", total ? "FAILED" : "passed");
        }
        rc = total != 0;
    } else if (g_memtest) {
        rc = memtest_crash(&s);
        long total = u_sum(&s, rc);
        if (rank == 0) {
            printf("ucp_verify: memtest-crash %s\n", total ? "FAILED" : "passed");
        }
        rc = total != 0;
    } else {
        if (!v->o.alloc_before && vx_alloc(v) != 0) {
            return 1;
        }
        vx_comm_t c = {.ctx = &s, .rank = rank, .send = u_send, .recv = u_recv,
                       .isend = u_isend, .irecv = u_irecv, .wait = u_wait,
                       .barrier = u_barrier, .sum = u_sum, .abort = u_abort};
        rc = vx_run(v, &c) != 0;
    }
    gp_fd_barrier_progress(fd, &s.u, 1);
    gp_ucp_close(&s.u, 0);
    if (v->allocated) {
        vx_free(v);
    }
    if (v->o.mem == GP_MEM_CUDA) {
        gp_devmem_fini();
    }
    return rc;
}

static volatile sig_atomic_t g_child_reaped, g_child_status;

static void on_sigchld(int sig)
{
    int wst = 0;
    (void)sig;
    if (waitpid(g_child, &wst, WNOHANG) != g_child) {
        return;
    }
    g_child_reaped = 1;
    g_child_status = wst;
    /* exit codes 0/1 are results; signals and 2+ mean it broke off */
    if (!WIFEXITED(wst) || WEXITSTATUS(wst) > 1) {
        static const char msg[] = "ucp_verify: child process failed\n";
        ssize_t n = write(2, msg, sizeof(msg) - 1);
        (void)n;
        _exit(2);
    }
}

int main(int argc, char **argv)
{
    vx_t v;
    int prc = vx_parse(&v, "ucp_verify", argc, argv, "", extra_opt, g_usage);
    if (prc != 0) {
        return prc > 0 ? 0 : 1;
    }
    if (g_memtest && v.o.mem != GP_MEM_CUDA) {
        fprintf(stderr, "ucp_verify: --memtest-crash needs -d cuda\n");
        return 1;
    }
    if (g_cycles > 0 && (g_kill_peer || g_memtest || v.o.alloc_before)) {
        fprintf(stderr, "ucp_verify: --cycles goes with none of --kill-peer, "
                "--memtest-crash, --alloc-before\n");
        return 1;
    }
    if (g_kill_peer && v.o.max < ((size_t)1 << 20)) {
        fprintf(stderr, "ucp_verify: --kill-peer needs --max >= 1M\n");
        return 1;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    fflush(stdout);
    g_child = gp_fork_alone(5.0);
    if (g_child < 0) {
        perror("fork");
        return 1;
    }
    if (g_child == 0) {
        close(sv[0]);
        /* exit(), not _exit(): the child runs the same teardown (atexit
         * handlers, library destructors, a leak checker) as the parent */
        exit(run_side(&v, 1, sv[1]));
    }
    close(sv[1]);
    if (!g_kill_peer) {
        /* a child that dies unexpectedly ends the parent too (no hang) */
        struct sigaction sa = {.sa_handler = on_sigchld, .sa_flags = SA_NOCLDSTOP};
        sigaction(SIGCHLD, &sa, NULL);
    }
    int rc = run_side(&v, 0, sv[0]);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL); /* no reaping behind our back now */
    close(sv[0]);
    if (!g_kill_peer) {
        int wst = 0;
        /* the SIGCHLD handler may run on another (UCX) thread and reap the
         * child first: then waitpid fails with ECHILD and the handler's
         * record (published right after its waitpid) is the answer */
        pid_t w = waitpid(g_child, &wst, 0);
        if ((w != g_child) && (errno == ECHILD)) {
            for (int spin = 0; !g_child_reaped && spin < 100000; ++spin) {
                sched_yield();
            }
        }
        if ((w != g_child) && g_child_reaped) {
            w   = g_child;
            wst = g_child_status;
        }
        if (w != g_child || !WIFEXITED(wst) ||
            WEXITSTATUS(wst) != 0) {
            fprintf(stderr, "ucp_verify: child failed (status 0x%x)\n", wst);
            rc = 1;
        }
    }
    return rc;
}
