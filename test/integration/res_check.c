/* See res_check.h. */
#include "res_check.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long count_dir(const char *path)
{
    DIR *d = opendir(path);
    long n = 0;
    if (d == NULL) {
        return -1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    }
    closedir(d);
    return n;
}

static int is_memfd(const char *line) { return strstr(line, "/memfd:") != NULL; }
static int is_shm(const char *line) { return strstr(line, " /dev/shm/") != NULL; }

static int count_maps(long *memfd, long *shm)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[PATH_MAX + 128];
    *memfd = *shm = 0;
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        *memfd += is_memfd(line);
        *shm += is_shm(line);
    }
    fclose(f);
    return 0;
}

int gp_res_take(gp_res_t *r)
{
    typedef int (*counts_fn)(struct gdrpipe_sim_counts *);
    memset(r, 0, sizeof(*r));
    /* opendir's own descriptor is counted: the same +1 in every snapshot */
    r->fds = count_dir("/proc/self/fd");
    r->threads = count_dir("/proc/self/task");
    r->devshm = count_dir("/dev/shm");
    if (r->fds < 0 || r->threads < 0 || count_maps(&r->memfd_maps, &r->shm_maps)) {
        return -1;
    }
    /* present only when the simulator is the loaded libcuda (RTLD_GLOBAL) */
    counts_fn fn = (counts_fn)dlsym(RTLD_DEFAULT, "gdrpipe_sim_get_counts");
    r->have_sim = fn != NULL && fn(&r->sim) == 0;
    return 0;
}

static void list_fds(const char *who)
{
    DIR *d = opendir("/proc/self/fd");
    char path[320], target[PATH_MAX];
    if (d == NULL) {
        return;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        target[n > 0 ? n : 0] = '\0';
        fprintf(stderr, "%s:   fd %s -> %s\n", who, e->d_name, target);
    }
    closedir(d);
}

static void list_threads(const char *who)
{
    DIR *d = opendir("/proc/self/task");
    char path[320], comm[64];
    if (d == NULL) {
        return;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        comm[0] = '\0';
        if (f != NULL) {
            if (fgets(comm, sizeof(comm), f) == NULL) {
                comm[0] = '\0';
            }
            fclose(f);
        }
        comm[strcspn(comm, "\n")] = '\0';
        fprintf(stderr, "%s:   thread %s (%s)\n", who, e->d_name, comm);
    }
    closedir(d);
}

static void list_maps(const char *who)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[PATH_MAX + 128];
    if (f == NULL) {
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (is_memfd(line) || is_shm(line)) {
            fprintf(stderr, "%s:   map %s", who, line);
        }
    }
    fclose(f);
}

#define RES_FIELDS(X)                                                          \
    X(fds) X(threads) X(memfd_maps) X(shm_maps) X(devshm)
#define SIM_FIELDS(X)                                                          \
    X(device_allocs) X(host_allocs) X(ipc_imports) X(streams) X(events)        \
    X(phys) X(user_pools) X(primary_refs)

int gp_res_diff(const gp_res_t *base, const gp_res_t *now, const char *who)
{
    int n = 0;
#define CMP(f)                                                                 \
    if (base->f != now->f) {                                                   \
        fprintf(stderr, "%s: %s %ld, baseline %ld\n", who, #f, now->f, base->f); \
        ++n;                                                                   \
    }
    RES_FIELDS(CMP)
#undef CMP
    if (base->have_sim != now->have_sim) {
        fprintf(stderr, "%s: the simulator's counters came or went\n", who);
        ++n;
    } else if (now->have_sim) {
#define CMP(f)                                                                 \
    if (base->sim.f != now->sim.f) {                                           \
        fprintf(stderr, "%s: cudasim %s %ld, baseline %ld\n", who, #f,         \
                now->sim.f, base->sim.f);                                      \
        ++n;                                                                   \
    }
        SIM_FIELDS(CMP)
#undef CMP
    }
    if (base->fds != now->fds) {
        list_fds(who);
    }
    if (base->threads != now->threads) {
        list_threads(who);
    }
    if (base->memfd_maps != now->memfd_maps || base->shm_maps != now->shm_maps) {
        list_maps(who);
    }
    return n;
}

void gp_res_print(const gp_res_t *r, const char *who)
{
    printf("%s: %ld fds, %ld threads, %ld memfd + %ld shm mappings, %ld in /dev/shm",
           who, r->fds, r->threads, r->memfd_maps, r->shm_maps, r->devshm);
    if (r->have_sim) {
        printf("; cudasim: %ld device + %ld host allocations, %ld IPC imports, "
               "%ld streams, %ld events, %ld primary refs", r->sim.device_allocs,
               r->sim.host_allocs, r->sim.ipc_imports, r->sim.streams, r->sim.events,
               r->sim.primary_refs);
    }
    printf("\n");
    fflush(stdout);
}
