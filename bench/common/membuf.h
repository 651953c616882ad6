/* Host or device buffers and the verification pattern shared by the
 * benchmarks and the integration programs. Device memory is reached only
 * through devmem.h (never by the CPU). */
#ifndef GDRPIPE_BENCH_MEMBUF_H
#define GDRPIPE_BENCH_MEMBUF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GP_MEM_HOST = 0, GP_MEM_CUDA = 1 } gp_mem_t;

/* "host"/"cuda" (also "H"/"D") -> type; -1 if unknown */
int gp_mem_parse(const char *s);
const char *gp_mem_name(gp_mem_t t);        /* "host" / "cuda" */
const char *gp_mem_letter(gp_mem_t t);      /* "H" / "D" */

/* GDRPIPE_TEST_DEVICE_AS_HOST=1: this process has no GPU (a rank without the
 * CUDA driver beside ranks with one): "cuda" buffers are host memory here, so
 * that every rank runs the same schedule. */
int gp_mem_device_as_host(void);

/* host: page-aligned malloc; cuda: cuMemAlloc. len 0 allocates 1 byte. */
void *gp_mem_alloc(gp_mem_t t, size_t len);
void gp_mem_free(gp_mem_t t, void *p);

/* The seed of one message: depends on size, iteration/message id and rank. */
uint32_t gp_pattern_seed(size_t size, uint64_t iter, int rank);
/* Byte `off` of the pattern of `seed`; never 0. Neighbouring bytes, 256-byte
 * blocks and 64 KiB blocks all differ, so shifts and swaps are detected. */
static inline uint8_t gp_pattern_byte(uint32_t seed, size_t off)
{
    uint8_t m1 = (uint8_t)((seed >> 8) | 1), m2 = (uint8_t)((seed >> 16) | 1),
            m3 = (uint8_t)((seed >> 24) | 1);
    uint8_t b = (uint8_t)((uint8_t)seed + (uint8_t)off * m1 +
                          (uint8_t)(off >> 8) * m2 + (uint8_t)(off >> 16) * m3 +
                          (uint8_t)(off >> 24) * 0x3b);
    return b ? b : 0x5a;
}

/* Fill [p, p+len) with the pattern (through the driver for cuda). */
int gp_mem_fill(gp_mem_t t, void *p, size_t len, uint32_t seed);
/* Set [p, p+len) to `value`. */
int gp_mem_set(gp_mem_t t, void *p, uint8_t value, size_t len);

typedef struct {
    size_t bad;        /* mismatching bytes */
    size_t first_bad;  /* offset of the first mismatch (if bad) */
    uint8_t got, want; /* at first_bad */
} gp_mem_diff_t;

/* Compare [p, p+len) with the pattern of `seed`; 0 = compared (see d->bad),
 * -1 = driver error. */
int gp_mem_verify(gp_mem_t t, const void *p, size_t len, uint32_t seed,
                  gp_mem_diff_t *d);
/* Compare [p, p+len) with a constant byte. */
int gp_mem_verify_const(gp_mem_t t, const void *p, size_t len, uint8_t value,
                        gp_mem_diff_t *d);

/* "4096", "64K", "4M", "1G" -> bytes; returns 0 on success */
int gp_parse_size(const char *s, size_t *out);

#ifdef __cplusplus
}
#endif
#endif
