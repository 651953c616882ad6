/* gdrpipe_ucp_sweep: UCP-level size sweep between two processes: tag
 * ping-pong latency (one-way, us) and streaming bandwidth (MB/s) per size,
 * with host or cuda buffers. One message per size is also verified.
 *   gdrpipe_ucp_sweep [opts]              fork both sides from one launcher
 *   gdrpipe_ucp_sweep -s [-p port] [opts] server (rank 0, prints the table)
 *   gdrpipe_ucp_sweep -c HOST [-p port]   client (rank 1)
 * -T (transfer-time mode, bench/sweep_paths.sh): per size, the MEDIAN of the
 * individually timed ping-pong half round trips instead of bandwidth. */
#include "common/devmem.h"
#include "common/membuf.h"
#include "common/ucpx.h"

#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GP_VERSION
#define GP_VERSION "unknown"
#endif

#define GP_OP_TIMEOUT 60.0
#define GP_MAX_SIZES 64
#define GP_MAX_MODES 3

typedef struct {
    gp_mem_t mem;                /* -d: rank 0's buffers */
    gp_mem_t mem1;               /* -d A,B: rank 1's (default: the same) */
    int device;
    size_t min_size, max_size;
    int iters, iters_large, bw_iters, bw_iters_large, skip, skip_large, window;
    int server, port;
    const char *host;
    int time_mode;               /* -T */
    int settle;                  /* -w: untimed ping-pongs before the sweep */
    char *modes[GP_MAX_MODES];   /* -M: UCX_GDRPIPE_PATH of each context */
    int nmodes;
    int yield_idle;              /* -Y */
    size_t sizes[GP_MAX_SIZES];  /* -S: explicit sizes (nsizes > 0) */
    int nsizes;
} sweep_opts_t;

static void usage(const char *p)
{
    printf("Usage: %s [-s | -c HOST] [-p PORT] [-d host|cuda] [-G DEV]\n"
           "          [-m [MIN:]MAX] [-i ITERS] [-x WARMUP] [-W WINDOW]\n"
           "  no -s/-c: fork both processes here (socketpair rendezvous)\n"
           "  -s        server: rank 0, waits on PORT (default 13337), prints\n"
           "  -c HOST   client: rank 1, connects to HOST:PORT\n"
           "  -d TYPE   buffers: host (default) or cuda; TYPE0,TYPE1 for different\n"
           "            types in rank 0 and rank 1 (e.g. cuda,host)\n"
           "  -G DEV    CUDA device (default: rank %% device count)\n"
           "  -m        sizes (default 1:4M, powers of two)\n"
           "  -i N      latency iterations and bandwidth windows for every size\n"
           "            (default 1000/100 latency, 100/20 bandwidth above 8 KiB)\n"
           "  -x N      warm-up iterations (default 10)\n"
           "  -W N      messages in flight for bandwidth (default 64)\n"
           "  -S LIST   explicit sizes, comma-separated (e.g. 1,4K,1M)\n"
           "  -T        transfer-time mode: per size the median one-way time of\n"
           "            ITERS individually timed ping-pongs (no bandwidth)\n"
           "  -I N      iterations for sizes up to 8 KiB only (after -i)\n"
           "  -w N      up to N untimed ping-pongs of the first size before the\n"
           "            sweep, at most 1 GiB each way per context (the GPU and CPU\n"
           "            leave their idle clocks first)\n"
           "  -M LIST   with -T: one UCP context per UCX_GDRPIPE_PATH value of LIST\n"
           "            (e.g. direct,staged,auto), all in these two processes; at\n"
           "            every size each is timed in turn (the order rotating) and\n"
           "            the line holds one median per context\n"
           "  -Y        yield the CPU while waiting with nothing to progress (lets\n"
           "            the CUDA simulator's copy threads run on a small machine)\n", p);
}

static int parse(int argc, char **argv, sweep_opts_t *o)
{
    int c, small_iters = 0, mem_set = 0;
    *o = (sweep_opts_t){.mem = GP_MEM_HOST, .device = -1, .min_size = 1,
                        .max_size = 1 << 22, .iters = 1000, .iters_large = 100,
                        .bw_iters = 100, .bw_iters_large = 20,
                        .skip = 10, .skip_large = 10, .window = 64, .port = 13337};
    while ((c = getopt(argc, argv, "sc:p:d:G:m:i:x:W:S:TYI:w:M:h")) != -1) {
        switch (c) {
        case 's': o->server = 1; break;
        case 'c': o->host = optarg; break;
        case 'p': o->port = atoi(optarg); break;
        case 'd': {
            char *comma = strchr(optarg, ',');
            if (comma != NULL) {
                *comma = '\0';
            }
            int t = gp_mem_parse(optarg);
            int t1 = comma != NULL ? gp_mem_parse(comma + 1) : t;
            if (t < 0 || t1 < 0) {
                fprintf(stderr, "-d takes host or cuda, or two of them: cuda,host\n");
                return -1;
            }
            o->mem = (gp_mem_t)t;
            o->mem1 = (gp_mem_t)t1;
            mem_set = 1;
            break;
        }
        case 'G': o->device = atoi(optarg); break;
        case 'm': {
            char *colon = strchr(optarg, ':');
            if (colon) {
                *colon = '\0';
                if ((*optarg && gp_parse_size(optarg, &o->min_size)) ||
                    (colon[1] && gp_parse_size(colon + 1, &o->max_size))) {
                    return -1;
                }
            } else if (gp_parse_size(optarg, &o->max_size)) {
                return -1;
            }
            if (o->min_size > o->max_size || o->max_size > (1u << 30)) {
                return -1;
            }
            break;
        }
        case 'i':
            o->iters = o->iters_large = atoi(optarg);
            o->bw_iters = o->bw_iters_large = o->iters;
            break;
        case 'x': o->skip = o->skip_large = atoi(optarg); break;
        case 'w': o->settle = atoi(optarg); break;
        case 'M': {
            char *save = NULL;
            for (char *t = strtok_r(optarg, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
                if (o->nmodes == GP_MAX_MODES) {
                    fprintf(stderr, "-M: at most %d modes\n", GP_MAX_MODES);
                    return -1;
                }
                o->modes[o->nmodes++] = t;
            }
            break;
        }
        case 'W': o->window = atoi(optarg); break;
        case 'T': o->time_mode = 1; break;
        case 'Y': o->yield_idle = 1; break;
        case 'I': small_iters = atoi(optarg); break;
        case 'S': {
            char *save = NULL;
            for (char *t = strtok_r(optarg, ",", &save); t != NULL;
                 t = strtok_r(NULL, ",", &save)) {
                size_t v;
                if (o->nsizes == GP_MAX_SIZES || gp_parse_size(t, &v) || v == 0 ||
                    v > (1u << 30)) {
                    fprintf(stderr, "-S: bad or too many sizes\n");
                    return -1;
                }
                o->sizes[o->nsizes++] = v;
                if (v > o->max_size) {
                    o->max_size = v;
                }
            }
            break;
        }
        case 'h': usage(argv[0]); exit(0);
        default: usage(argv[0]); return -1;
        }
    }
    if (small_iters > 0) {
        o->iters = small_iters; /* after -i, whatever the order */
    }
    if (!mem_set) {
        o->mem1 = o->mem;
    }
    if (o->iters <= 0 || o->window <= 0 || o->skip < 0 || optind != argc ||
        (o->server && o->host) || (o->nmodes > 0 && !o->time_mode)) {
        usage(argv[0]);
        return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* the rank-dependent part: runs in both processes */
/* GP_SWEEP_CPUS="A,B": rank 0 runs on CPU A, rank 1 on CPU B (less
 * run-to-run spread than wherever the scheduler puts them) */
static void bind_rank(int rank)
{
    const char *cpus = getenv("GP_SWEEP_CPUS");
    int a = -1, b = -1;
    if (cpus == NULL || sscanf(cpus, "%d,%d", &a, &b) != 2) {
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(rank == 0 ? a : b, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        perror("sched_setaffinity (GP_SWEEP_CPUS)");
    }
}

/* ITERS timed ping-pongs of SIZE after SKIP untimed ones: *lat the mean
 * one-way time, *med the median of the individually timed ones (us) */
static ucs_status_t pingpong(gp_ucp_t *u, int rank, void *sbuf, void *rbuf, size_t size,
                             ucp_tag_t tag, int iters, int skip, double *samples,
                             double *lat, double *med)
{
    ucs_status_t st = UCS_OK;
    double t0 = 0;
    for (int i = 0; i < iters + skip && st == UCS_OK; ++i) {
        if (i == skip) {
            t0 = gp_now();
        }
        const double ti = gp_now();
        if (rank == 0) {
            st = gp_ucp_send(u, sbuf, size, tag, GP_OP_TIMEOUT);
            if (st == UCS_OK) {
                st = gp_ucp_recv(u, rbuf, size, tag, NULL, GP_OP_TIMEOUT);
            }
        } else {
            st = gp_ucp_recv(u, rbuf, size, tag, NULL, GP_OP_TIMEOUT);
            if (st == UCS_OK) {
                st = gp_ucp_send(u, sbuf, size, tag, GP_OP_TIMEOUT);
            }
        }
        if (i >= skip && samples != NULL) {
            samples[i - skip] = (gp_now() - ti) * 1e6 / 2.0;
        }
    }
    *lat = (gp_now() - t0) * 1e6 / (2.0 * iters);
    if (samples == NULL) { /* untimed */
        *med = *lat;
        return st;
    }
    /* median of the individually timed round trips: robust against the
     * scheduling hiccups of a loaded machine */
    qsort(samples, (size_t)iters, sizeof(*samples), cmp_double);
    *med = iters % 2 ? samples[iters / 2] : 0.5 * (samples[iters / 2 - 1] + samples[iters / 2]);
    return st;
}

/* one verified message each way; *bad counts what this rank received wrong */
static ucs_status_t verify_size(gp_ucp_t *u, int rank, gp_mem_t mem, void *sbuf, void *rbuf,
                                size_t size, ucp_tag_t tag, long *bad, int *failed)
{
    ucs_status_t st = UCS_OK;
    size_t got = 0;
    for (int dir = 0; dir < 2 && st == UCS_OK; ++dir) {
        uint32_t seed = gp_pattern_seed(size, (uint64_t)dir, dir);
        if (rank == dir) {
            if (gp_mem_fill(mem, sbuf, size, seed) != 0) {
                *failed = 1;
            }
            st = gp_ucp_send(u, sbuf, size, tag, GP_OP_TIMEOUT);
        } else {
            gp_mem_diff_t d;
            gp_mem_set(mem, rbuf, 0, size);
            st = gp_ucp_recv(u, rbuf, size, tag, &got, GP_OP_TIMEOUT);
            if (st == UCS_OK &&
                (got != size || gp_mem_verify(mem, rbuf, size, seed, &d) != 0 || d.bad)) {
                ++*bad;
            }
        }
    }
    return st;
}

/* the settling ping-pongs of a run whose first size is SIZE: at most
 * REQUESTED, and at most 1 GiB each way (at least 16): 20000 ping-pongs suit
 * a sweep that starts at 1 B, but of 16 MiB they take minutes (a re-measured
 * 16 MiB size ran past a 170 s time limit on the GPU). Both ranks compute
 * the same count from the same arguments. */
static int settle_iters(int requested, size_t size)
{
    const size_t budget = (size_t)1 << 30;
    const size_t cap = size > 0 ? budget / size : budget;
    if (requested <= 0) {
        return 0;
    }
    if (cap < 16) {
        return requested < 16 ? requested : 16;
    }
    return (size_t)requested < cap ? requested : (int)cap;
}

static int run_side(const sweep_opts_t *o, int rank, int fd)
{
    gp_ucp_t us[GP_MAX_MODES];
    const int nctx = o->nmodes > 0 ? o->nmodes : 1;
    const gp_mem_t mem = rank == 0 ? o->mem : o->mem1;
    memset(us, 0, sizeof(us));
    bind_rank(rank);
    if (mem == GP_MEM_CUDA && gp_devmem_init(o->device, rank) != 0) {
        return 1;
    }
    /* one context per mode (UCX applies "PATH" to every transport that has
     * it: gdrpipe and gp_rdma); the same order in both processes */
    for (int k = 0; k < nctx; ++k) {
        const char *mods[] = {"PATH", o->nmodes > 0 ? o->modes[k] : NULL, NULL};
        if (gp_ucp_open_cfg(&us[k], o->nmodes > 0 ? mods : NULL) != 0 ||
            gp_ucp_connect(&us[k], fd, 0) != 0) {
            for (int j = 0; j <= k; ++j) {
                gp_ucp_close(&us[j], 1);
            }
            return 1;
        }
        us[k].yield_idle = o->yield_idle;
    }
    gp_ucp_t *u = &us[0];
    void *sbuf = gp_mem_alloc(mem, o->max_size);
    void *rbuf = gp_mem_alloc(mem, o->max_size);
    ucs_status_ptr_t *reqs = calloc((size_t)o->window, sizeof(*reqs));
    const int max_iters = o->iters > o->iters_large ? o->iters : o->iters_large;
    double *samples = calloc((size_t)max_iters, sizeof(*samples));
    int failed = (sbuf == NULL || rbuf == NULL || reqs == NULL || samples == NULL);
    if (!failed) {
        failed = gp_mem_set(mem, sbuf, 'a', o->max_size) != 0 ||
                 gp_mem_set(mem, rbuf, 'b', o->max_size) != 0;
    }
    if (rank == 0 && !failed) {
        printf("# gdrpipe UCP Sweep v%s\n", GP_VERSION);
        printf("# Buffers on %s (rank 0), %s (rank 1)\n", o->mem == GP_MEM_CUDA ? "DEVICE (D)" : "HOST (H)",
               o->mem1 == GP_MEM_CUDA ? "DEVICE (D)" : "HOST (H)");
        const char *tls = getenv("UCX_TLS"), *proto = getenv("UCX_PROTO_ENABLE");
        printf("# UCX_TLS=%s UCX_PROTO_ENABLE=%s\n", tls ? tls : "(unset)",
               proto ? proto : "(unset)");
        if (o->nmodes > 0) {
            printf("%-*s", 10, "# Size");
            for (int k = 0; k < o->nmodes; ++k) {
                printf("%*s", 14, o->modes[k]);
            }
            printf("%*s\n", 8, "Check");
            printf("# (median one-way us per UCX_GDRPIPE_PATH, one context each)\n");
        } else if (o->time_mode) {
            printf("%-*s%*s%*s%*s\n", 10, "# Size", 18, "Median (us)", 18,
                   "Mean (us)", 8, "Check");
        } else {
            printf("%-*s%*s%*s%*s\n", 10, "# Size", 18, "Latency (us)", 18,
                   "Bandwidth (MB/s)", 8, "Check");
        }
        fflush(stdout);
    }
    /* settle: the first measurements of a process otherwise depend on the
     * clocks the previous process left the GPU and CPU in */
    const size_t first = o->nsizes ? o->sizes[0] : o->min_size;
    const int settle = settle_iters(o->settle, first);
    for (int k = 0; k < nctx && !failed; ++k) {
        double l, m;
        failed = settle > 0 &&
                 pingpong(&us[k], rank, sbuf, rbuf, first, 1, settle, 0, NULL, &l, &m) != UCS_OK;
    }
    int next_idx = 0;
    for (size_t size = o->nsizes ? o->sizes[0] : o->min_size;
         (o->nsizes ? next_idx < o->nsizes : size <= o->max_size) && !failed;
         size = o->nsizes ? (next_idx < o->nsizes ? o->sizes[next_idx] : 0)
                          : (size ? size * 2 : 1)) {
        const int idx = next_idx++;
        const int large = size > 8192;
        const int iters = large ? o->iters_large : o->iters;
        const int skip = large ? o->skip_large : o->skip;
        const int bw_iters = large ? o->bw_iters_large : o->bw_iters;
        const ucp_tag_t tag = size;
        ucs_status_t st = UCS_OK;
        double t0 = 0, lat = 0, bw = 0, med[GP_MAX_MODES] = {0};

        if (gp_fd_barrier_progress(fd, us, nctx) != 0) {
            failed = 1;
            break;
        }
        /* ping-pong, each context in turn (the first one rotating) */
        for (int j = 0; j < nctx && st == UCS_OK; ++j) {
            const int k = (idx + j) % nctx;
            st = pingpong(&us[k], rank, sbuf, rbuf, size, tag, iters, skip, samples, &lat, &med[k]);
        }
        if (o->time_mode) {
            bw = lat; /* printed as the mean */
            lat = med[0];
        }
        /* streaming: rank 0 sends windows, rank 1 acknowledges each */
        for (int i = 0; i < (o->time_mode ? 0 : bw_iters + skip) && st == UCS_OK; ++i) {
            if (i == skip) {
                t0 = gp_now();
            }
            for (int j = 0; j < o->window; ++j) {
                reqs[j] = rank == 0 ? gp_ucp_isend(u, sbuf, size, tag)
                                    : gp_ucp_irecv(u, rbuf, size, tag, NULL);
            }
            for (int j = 0; j < o->window; ++j) {
                ucs_status_t s = gp_ucp_wait(u, reqs[j], rank != 0, NULL,
                                             GP_OP_TIMEOUT);
                if (s != UCS_OK && st == UCS_OK) {
                    st = s;
                }
            }
            if (st == UCS_OK) {
                st = rank == 0 ? gp_ucp_recv(u, rbuf, 4, tag + 1, NULL, GP_OP_TIMEOUT)
                               : gp_ucp_send(u, sbuf, 4, tag + 1, GP_OP_TIMEOUT);
            }
        }
        if (!o->time_mode) {
            bw = (double)size * bw_iters * o->window / 1e6 / (gp_now() - t0);
        }
        /* one verified message each way, through every context */
        long bad = 0;
        for (int k = 0; k < nctx && st == UCS_OK; ++k) {
            st = verify_size(&us[k], rank, mem, sbuf, rbuf, size, tag + 2, &bad, &failed);
        }
        long peer_bad = 0;
        if (gp_fd_exchange_progress(fd, us, nctx, &bad, &peer_bad, sizeof(bad)) != 0) {
            failed = 1;
        }
        if (st != UCS_OK) {
            fprintf(stderr, "rank %d: size %zu: %s\n", rank, size, ucs_status_string(st));
            failed = 1;
        } else if (bad + peer_bad) {
            failed = 1;
        }
        if (rank == 0 && st == UCS_OK) {
            if (o->nmodes > 0) {
                printf("%-*zu", 10, size);
                for (int k = 0; k < o->nmodes; ++k) {
                    printf("%*.2f", 14, med[k]);
                }
                printf("%*s\n", 8, bad + peer_bad ? "FAIL" : "ok");
            } else {
                printf("%-*zu%*.*f%*.*f%*s\n", 10, size, 18, 2, lat, 18, 2, bw, 8,
                       bad + peer_bad ? "FAIL" : "ok");
            }
            fflush(stdout);
        }
    }
    gp_fd_barrier_progress(fd, us, nctx);
    gp_mem_free(mem, sbuf);
    gp_mem_free(mem, rbuf);
    free(reqs);
    free(samples);
    for (int k = nctx - 1; k >= 0; --k) {
        gp_ucp_close(&us[k], failed);
    }
    if (mem == GP_MEM_CUDA) {
        gp_devmem_fini();
    }
    return failed;
}

int main(int argc, char **argv)
{
    sweep_opts_t o;
    if (parse(argc, argv, &o) != 0) {
        return 1;
    }
    if (o.server) {
        int fd = gp_tcp_listen_accept(o.port);
        return fd < 0 ? 1 : run_side(&o, 0, fd);
    }
    if (o.host) {
        int fd = gp_tcp_connect(o.host, o.port, 30.0);
        return fd < 0 ? 1 : run_side(&o, 1, fd);
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 1;
    }
    fflush(stdout);
    const pid_t launcher = getpid();
    pid_t child = gp_fork_alone(5.0);
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        // a launcher killed (a time limit) takes its peer along: an orphaned
        // rank polls on its core and skews whatever is timed next
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher) _exit(1);
        close(sv[0]);
        _exit(run_side(&o, 1, sv[1]));
    }
    close(sv[1]);
    int rc = run_side(&o, 0, sv[0]);
    close(sv[0]);
    int wst = 0;
    if (waitpid(child, &wst, 0) != child || !WIFEXITED(wst) || WEXITSTATUS(wst)) {
        fprintf(stderr, "peer process failed (status 0x%x)\n", wst);
        rc = 1;
    }
    return rc;
}
