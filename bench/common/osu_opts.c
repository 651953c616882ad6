/* See osu_opts.h. Defaults follow OSU micro-benchmarks 7 (osu_util.h). */
#include "osu_opts.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GP_VERSION
#define GP_VERSION "unknown"
#endif

static void gp_osu_usage(const char *prog, gp_bench_kind_t kind)
{
    printf("Usage: %s [options] [H|D H|D]\n", prog);
    printf("  -d, --accelerator TYPE  buffer type: host (default) or cuda\n"
           "                          after the options, two letters give the\n"
           "                          placement of rank 0 and rank 1 (e.g. D D, H D)\n"
           "  -m, --message-size [MIN:]MAX  sizes MIN..MAX, powers of two "
           "(default %s:4194304)\n"
           "  -i, --iterations N      timed iterations for every size "
           "(default %d, %d above 8192 B)\n"
           "  -x, --warmup N          untimed iterations (default %d, %d above 8192 B)\n",
           kind == GP_BENCH_LATENCY ? "0" : "1",
           kind == GP_BENCH_LATENCY ? 10000 : 100,
           kind == GP_BENCH_LATENCY ? 1000 : 20,
           kind == GP_BENCH_LATENCY ? 100 : 10,
           kind == GP_BENCH_LATENCY ? 10 : 2);
    if (kind != GP_BENCH_LATENCY) {
        printf("  -W, --window-size N     messages in flight per iteration (default 64)\n");
    }
    printf("  -c, --validation        check every received byte of every iteration\n"
           "  -G, --device N          CUDA device (default: local rank %% device count)\n"
           "  -v, --version           print the version\n"
           "  -h, --help              this text\n"
           "Run with exactly 2 MPI ranks.\n");
}

static int gp_parse_range(const char *s, size_t *lo, size_t *hi)
{
    const char *colon = strchr(s, ':');
    if (colon == NULL) {
        return gp_parse_size(s, hi);
    }
    char buf[64];
    size_t n = (size_t)(colon - s);
    if (n >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (n > 0 && gp_parse_size(buf, lo) != 0) {
        return -1;
    }
    if (colon[1] != '\0' && gp_parse_size(colon + 1, hi) != 0) {
        return -1;
    }
    return 0;
}

int gp_osu_parse(int argc, char **argv, gp_bench_kind_t kind, int quiet,
                 gp_osu_opts_t *o)
{
    static const struct option longopts[] = {
        {"accelerator", required_argument, NULL, 'd'},
        {"message-size", required_argument, NULL, 'm'},
        {"iterations", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'x'},
        {"window-size", required_argument, NULL, 'W'},
        {"validation", no_argument, NULL, 'c'},
        {"device", required_argument, NULL, 'G'},
        {"version", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const int lat = (kind == GP_BENCH_LATENCY);
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->min_size = lat ? 0 : 1;
    o->max_size = 1 << 22;
    o->iters = lat ? 10000 : 100;
    o->iters_large = lat ? 1000 : 20;
    o->skip = lat ? 100 : 10;
    o->skip_large = lat ? 10 : 2;
    o->large_size = 8192;
    o->window = 64;
    o->device = -1;
    int accel = GP_MEM_HOST;
    int c;

    optind = 1;
    opterr = !quiet;
    while ((c = getopt_long(argc, argv, lat ? "d:m:i:x:cG:vh" : "d:m:i:x:W:cG:vh",
                            longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            accel = gp_mem_parse(optarg);
            if (accel < 0 || !strcmp(optarg, "H") || !strcmp(optarg, "D")) {
                if (!quiet) {
                    fprintf(stderr, "%s: -d takes host or cuda, not '%s'\n",
                            argv[0], optarg);
                }
                return -1;
            }
            break;
        case 'm':
            if (gp_parse_range(optarg, &o->min_size, &o->max_size) != 0 ||
                o->min_size > o->max_size || o->max_size > (size_t)1 << 30) {
                if (!quiet) {
                    fprintf(stderr, "%s: bad -m '%s' (MIN:MAX, MAX <= 1G)\n",
                            argv[0], optarg);
                }
                return -1;
            }
            break;
        case 'i':
            o->iters = o->iters_large = atoi(optarg);
            if (o->iters <= 0) {
                if (!quiet) {
                    fprintf(stderr, "%s: -i must be > 0\n", argv[0]);
                }
                return -1;
            }
            break;
        case 'x':
            o->skip = o->skip_large = atoi(optarg);
            if (o->skip < 0) {
                if (!quiet) {
                    fprintf(stderr, "%s: -x must be >= 0\n", argv[0]);
                }
                return -1;
            }
            break;
        case 'W':
            o->window = atoi(optarg);
            if (o->window <= 0 || o->window > 4096) {
                if (!quiet) {
                    fprintf(stderr, "%s: -W must be 1..4096\n", argv[0]);
                }
                return -1;
            }
            break;
        case 'c': o->validate = 1; break;
        case 'G': o->device = atoi(optarg); break;
        case 'v':
            if (!quiet) {
                printf("gdrpipe benchmarks v%s\n", GP_VERSION);
            }
            return 1;
        case 'h':
            if (!quiet) {
                gp_osu_usage(argv[0], kind);
            }
            return 1;
        default:
            if (!quiet) {
                gp_osu_usage(argv[0], kind);
            }
            return -1;
        }
    }
    o->mem[0] = o->mem[1] = (gp_mem_t)accel;
    int npos = argc - optind;
    if (npos != 0 && npos != 2) {
        if (!quiet) {
            fprintf(stderr, "%s: give the placement as two letters (e.g. D D)\n",
                    argv[0]);
        }
        return -1;
    }
    for (int r = 0; r < npos; ++r) {
        const char *a = argv[optind + r];
        if (strcmp(a, "H") && strcmp(a, "D")) {
            if (!quiet) {
                fprintf(stderr, "%s: placement '%s' is not H or D\n", argv[0], a);
            }
            return -1;
        }
        if (a[0] == 'D' && accel != GP_MEM_CUDA) {
            if (!quiet) {
                fprintf(stderr, "%s: placement D needs -d cuda\n", argv[0]);
            }
            return -1;
        }
        o->mem[r] = a[0] == 'D' ? GP_MEM_CUDA : GP_MEM_HOST;
    }
    o->any_cuda = (o->mem[0] == GP_MEM_CUDA || o->mem[1] == GP_MEM_CUDA);
    return 0;
}

void gp_osu_print_header(const gp_osu_opts_t *o, const char *name,
                         const char *column)
{
    static const char *const where[] = {"HOST (H)", "DEVICE (D)"};
    printf("# gdrpipe %s Test v%s\n", name, GP_VERSION);
    printf("# Send Buffer on %s and Receive Buffer on %s\n", where[o->mem[0]],
           where[o->mem[1]]);
    const char *tls = getenv("UCX_TLS");
    printf("# UCX_TLS=%s\n", tls ? tls : "(unset)");
    if (o->validate) {
        printf("%-*s%*s%*s\n", 10, "# Size", 18, column, 14, "Validation");
    } else {
        printf("%-*s%*s\n", 10, "# Size", 18, column);
    }
    fflush(stdout);
}
