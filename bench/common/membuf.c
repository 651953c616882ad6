/* See membuf.h. */
#include "membuf.h"

#include "devmem.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int gp_mem_parse(const char *s)
{
    if (!strcasecmp(s, "host") || !strcmp(s, "H")) {
        return GP_MEM_HOST;
    }
    if (!strcasecmp(s, "cuda") || !strcmp(s, "D")) {
        return GP_MEM_CUDA;
    }
    return -1;
}

int gp_mem_device_as_host(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("GDRPIPE_TEST_DEVICE_AS_HOST");
        on = e != NULL && e[0] == '1';
    }
    return on;
}

/* the placement a buffer of type t really has in this process */
static gp_mem_t gp_mem_here(gp_mem_t t)
{
    return (t == GP_MEM_CUDA && gp_mem_device_as_host()) ? GP_MEM_HOST : t;
}

const char *gp_mem_name(gp_mem_t t) { return t == GP_MEM_CUDA ? "cuda" : "host"; }
const char *gp_mem_letter(gp_mem_t t) { return t == GP_MEM_CUDA ? "D" : "H"; }

void *gp_mem_alloc(gp_mem_t t, size_t len)
{
    t = gp_mem_here(t);
    if (t == GP_MEM_CUDA) {
        return gp_devmem_alloc(len);
    }
    void *p = NULL;
    int rc = posix_memalign(&p, 4096, len ? len : 1);
    if (rc != 0) {
        fprintf(stderr, "membuf: cannot allocate %zu host bytes: %s\n", len,
                strerror(rc));
        return NULL;
    }
    return p;
}

void gp_mem_free(gp_mem_t t, void *p)
{
    t = gp_mem_here(t);
    if (t == GP_MEM_CUDA) {
        gp_devmem_free(p);
    } else {
        free(p);
    }
}

uint32_t gp_pattern_seed(size_t size, uint64_t iter, int rank)
{
    /* splitmix64 finaliser over the three inputs */
    uint64_t x = (uint64_t)size * 0x9e3779b97f4a7c15ULL ^
                 (iter + 1) * 0xbf58476d1ce4e5b9ULL ^
                 ((uint64_t)rank + 7) * 0x94d049bb133111ebULL;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (uint32_t)x;
}

/* host staging for device buffers: grows, kept for the process lifetime */
static uint8_t *g_scratch;
static size_t g_scratch_len;

static uint8_t *gp_scratch(size_t len)
{
    if (len > g_scratch_len) {
        free(g_scratch);
        g_scratch = malloc(len);
        g_scratch_len = g_scratch ? len : 0;
        if (g_scratch == NULL) {
            fprintf(stderr, "membuf: cannot allocate %zu bytes of staging\n", len);
        }
    }
    return g_scratch;
}

static void gp_fill_host(uint8_t *p, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; ++i) {
        p[i] = gp_pattern_byte(seed, i);
    }
}

int gp_mem_fill(gp_mem_t t, void *p, size_t len, uint32_t seed)
{
    t = gp_mem_here(t);
    if (t == GP_MEM_HOST) {
        gp_fill_host(p, len, seed);
        return 0;
    }
    uint8_t *s = gp_scratch(len);
    if (s == NULL && len) {
        return -1;
    }
    gp_fill_host(s, len, seed);
    return gp_devmem_htod(p, s, len);
}

int gp_mem_set(gp_mem_t t, void *p, uint8_t value, size_t len)
{
    t = gp_mem_here(t);
    if (t == GP_MEM_HOST) {
        memset(p, value, len);
        return 0;
    }
    return gp_devmem_memset(p, value, len);
}

static const uint8_t *gp_host_view(gp_mem_t t, const void *p, size_t len)
{
    t = gp_mem_here(t);
    if (t == GP_MEM_HOST) {
        return p;
    }
    uint8_t *s = gp_scratch(len);
    if ((s == NULL && len) || gp_devmem_dtoh(s, p, len) != 0) {
        return NULL;
    }
    return s;
}

int gp_mem_verify(gp_mem_t t, const void *p, size_t len, uint32_t seed,
                  gp_mem_diff_t *d)
{
    memset(d, 0, sizeof(*d));
    const uint8_t *h = gp_host_view(t, p, len);
    if (h == NULL && len) {
        return -1;
    }
    for (size_t i = 0; i < len; ++i) {
        uint8_t want = gp_pattern_byte(seed, i);
        if (h[i] != want) {
            if (d->bad++ == 0) {
                d->first_bad = i;
                d->got = h[i];
                d->want = want;
            }
        }
    }
    return 0;
}

int gp_mem_verify_const(gp_mem_t t, const void *p, size_t len, uint8_t value,
                        gp_mem_diff_t *d)
{
    memset(d, 0, sizeof(*d));
    const uint8_t *h = gp_host_view(t, p, len);
    if (h == NULL && len) {
        return -1;
    }
    for (size_t i = 0; i < len; ++i) {
        if (h[i] != value) {
            if (d->bad++ == 0) {
                d->first_bad = i;
                d->got = h[i];
                d->want = value;
            }
        }
    }
    return 0;
}

int gp_parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s) {
        return -1;
    }
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': shift = 10; ++end; break;
    case 'M': shift = 20; ++end; break;
    case 'G': shift = 30; ++end; break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'I') {
        ++end;
    }
    if (*end == 'B' || *end == 'b') {
        ++end;
    }
    if (*end != '\0' || (shift && v > (~0ULL >> shift))) {
        return -1;
    }
    *out = (size_t)(v << shift);
    return 0;
}
