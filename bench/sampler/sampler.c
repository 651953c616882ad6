/* gdrpipe_sampler -- a statistical CPU profiler to preload into any program
 * (an MPI rank, a UCX client): where a process's time goes, per call stack,
 * with no perf, no debugger and no rebuild of the program.
 *
 *   GDRPIPE_SAMPLE=/dir LD_PRELOAD=libgdrpipe_sampler.so program ...
 *
 * A timer interrupts the thread that loaded the library (the main thread)
 * every GDRPIPE_SAMPLE_US microseconds of wall-clock time (default 100); the
 * signal handler stores its call stack. At exit the stacks are folded, counted
 * and written to /dir/sample.<pid>.folded, one line per stack, root first:
 *
 *   <count> <frame>;<frame>;...;<leaf>
 *
 * where a frame is lib!symbol+0xoff (the library's dynamic symbol) or
 * lib+0xoff (none: the library's own offset, for addr2line against an
 * unstripped copy; bench/sampler/fold_report.py does that). Wall-clock
 * sampling counts waiting and polling too, which is what a busy-polling
 * transport's time is.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GP_SAMPLER_DEPTH 24

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

typedef struct {
    uint8_t depth;
    void   *pc[GP_SAMPLER_DEPTH];
} gp_sample_t;

static gp_sample_t *gp_samples;
static size_t gp_capacity;
static volatile size_t gp_count;
static volatile size_t gp_dropped;
static volatile int gp_active;
static timer_t gp_timer;
static char gp_dir[512];

static void gp_sampler_on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    size_t i;
    void *frames[GP_SAMPLER_DEPTH + 2];
    int n, skip;

    (void)sig;
    (void)si;
    (void)uc;
    if (!gp_active) {
        goto out;
    }
    i = gp_count;
    if (i >= gp_capacity) {
        gp_dropped = gp_dropped + 1;
        goto out;
    }
    gp_count = i + 1;
    /* frames: this handler, the signal trampoline, then the interrupted
     * code (whose own frame is the leaf) */
    n    = backtrace(frames, GP_SAMPLER_DEPTH + 2);
    skip = n > 2 ? 2 : n;
    gp_samples[i].depth = (uint8_t)(n - skip);
    memcpy(gp_samples[i].pc, frames + skip, sizeof(void*) * (size_t)(n - skip));
out:
    errno = saved;
}

/* one frame as text: lib!sym+0xoff, or lib+0xoff without a symbol */
static void gp_sampler_frame(void *pc, int leaf, char *out, size_t len)
{
    Dl_info info;
    /* a return address points after the call: look up the call itself */
    uintptr_t a = (uintptr_t)pc - (leaf ? 0 : 1);
    const char *lib;

    if (!dladdr((void*)a, &info) || (info.dli_fname == NULL)) {
        snprintf(out, len, "?+%#lx", (unsigned long)a);
        return;
    }
    lib = strrchr(info.dli_fname, '/');
    lib = (lib != NULL) ? lib + 1 : info.dli_fname;
    if (*lib == '\0') {
        lib = "main";
    }
    if (info.dli_sname != NULL) {
        snprintf(out, len, "%s!%s+%#lx", lib, info.dli_sname,
                 (unsigned long)(a - (uintptr_t)info.dli_saddr));
    } else {
        snprintf(out, len, "%s+%#lx", lib, (unsigned long)(a - (uintptr_t)info.dli_fbase));
    }
}

typedef struct {
    char  *stack;
    size_t count;
} gp_folded_t;

static int gp_sampler_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const*)a, *(char *const*)b);
}

static void gp_sampler_write(void)
{
    char path[600], frame[512];
    char **lines;
    size_t i, n = gp_count, runs = 0;
    FILE *f;
    int d;

    lines = calloc(n ? n : 1, sizeof(*lines));
    if (lines == NULL) {
        return;
    }
    for (i = 0; i < n; ++i) {
        size_t cap = 256, used = 0;
        char *s = malloc(cap);
        if (s == NULL) {
            break;
        }
        s[0] = '\0';
        for (d = gp_samples[i].depth - 1; d >= 0; --d) {
            size_t fl;
            gp_sampler_frame(gp_samples[i].pc[d], d == 0, frame, sizeof(frame));
            fl = strlen(frame);
            while (used + fl + 2 > cap) {
                char *t = realloc(s, cap * 2);
                if (t == NULL) {
                    break;
                }
                s    = t;
                cap *= 2;
            }
            if (used + fl + 2 > cap) {
                break;
            }
            if (used > 0) {
                s[used++] = ';';
            }
            memcpy(s + used, frame, fl + 1);
            used += fl;
        }
        lines[i] = s;
    }
    n = i;
    qsort(lines, n, sizeof(*lines), gp_sampler_cmp);
    snprintf(path, sizeof(path), "%s/sample.%d.folded", gp_dir, (int)getpid());
    f = fopen(path, "w");
    if (f != NULL) {
        for (i = 0; i < n; i += runs) {
            for (runs = 1; (i + runs < n) && !strcmp(lines[i], lines[i + runs]); ++runs) {
            }
            fprintf(f, "%zu %s\n", runs, lines[i]);
        }
        fclose(f);
        fprintf(stderr, "gdrpipe_sampler: pid %d: %zu samples (%zu dropped) in %s\n",
                (int)getpid(), n, (size_t)gp_dropped, path);
    }
    for (i = 0; i < n; ++i) {
        free(lines[i]);
    }
    free(lines);
}

static void gp_sampler_stop(void)
{
    if (!gp_active) {
        return;
    }
    gp_active = 0;
    timer_delete(gp_timer);
    gp_sampler_write();
}

__attribute__((constructor)) static void gp_sampler_start(void)
{
    const char *dir = getenv("GDRPIPE_SAMPLE");
    const char *us  = getenv("GDRPIPE_SAMPLE_US");
    long period_us  = (us != NULL) ? strtol(us, NULL, 10) : 100;
    struct sigaction sa;
    struct sigevent sev;
    struct itimerspec its;
    void *prime[4];

    if ((dir == NULL) || (*dir == '\0')) {
        return;
    }
    if (period_us < 10) {
        period_us = 10;
    }
    snprintf(gp_dir, sizeof(gp_dir), "%s", dir);
    gp_capacity = 400000;
    gp_samples  = mmap(NULL, gp_capacity * sizeof(gp_sample_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (gp_samples == MAP_FAILED) {
        gp_samples = NULL;
        return;
    }
    backtrace(prime, 4); /* loads the unwinder outside the signal handler */

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = gp_sampler_on_signal;
    sa.sa_flags     = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0) {
        return;
    }
    memset(&sev, 0, sizeof(sev));
    sev.sigev_notify          = SIGEV_THREAD_ID;
    sev.sigev_signo           = SIGPROF;
    sev._sigev_un._tid        = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &sev, &gp_timer) != 0) {
        fprintf(stderr, "gdrpipe_sampler: timer_create: %s\n", strerror(errno));
        return;
    }
    its.it_interval.tv_sec  = period_us / 1000000;
    its.it_interval.tv_nsec = (period_us % 1000000) * 1000;
    its.it_value            = its.it_interval;
    gp_active = 1;
    if (timer_settime(gp_timer, 0, &its, NULL) != 0) {
        gp_active = 0;
        return;
    }
    atexit(gp_sampler_stop);
}
