/* devmem_selftest: the benchmarks' device-memory layer (bench/common/devmem.c,
 * membuf.c) against whatever libcuda UCX_GDRPIPE_CUDA_LIB names (the
 * simulator in CI): allocation, pattern fill and verification through the
 * driver, detection of a single wrong byte, memset. Exit 0 = all passed. */
#include "devmem.h"
#include "membuf.h"

#include <stdio.h>

static int g_fail;

#define CHECK(_cond)                                                           \
    do {                                                                       \
        if (!(_cond)) {                                                        \
            fprintf(stderr, "devmem_selftest: FAIL line %d: %s\n", __LINE__,   \
                    #_cond);                                                   \
            ++g_fail;                                                          \
        }                                                                      \
    } while (0)

int main(void)
{
    gp_mem_diff_t d;
    const size_t len = (1 << 20) + 13;
    if (gp_devmem_init(-1, 1) != 0) {
        fprintf(stderr, "devmem_selftest: init failed\n");
        return 1;
    }
    CHECK(gp_devmem_ready());
    CHECK(gp_devmem_count() >= 1);
    CHECK(gp_devmem_device() == 1 % gp_devmem_count());
    printf("devmem_selftest: device %d of %d\n", gp_devmem_device(),
           gp_devmem_count());

    void *p = gp_mem_alloc(GP_MEM_CUDA, len);
    CHECK(p != NULL);
    if (p == NULL) {
        return 1;
    }
    const uint32_t seed = gp_pattern_seed(len, 5, 1);
    CHECK(gp_mem_fill(GP_MEM_CUDA, p, len, seed) == 0);
    CHECK(gp_mem_verify(GP_MEM_CUDA, p, len, seed, &d) == 0 && d.bad == 0);
    /* another message's pattern differs almost everywhere */
    CHECK(gp_mem_verify(GP_MEM_CUDA, p, len, gp_pattern_seed(len, 6, 1), &d) == 0 &&
          d.bad > len / 2);
    /* one wrong byte is found at its offset */
    const size_t off = 777777;
    uint8_t wrong = (uint8_t)(gp_pattern_byte(seed, off) ^ 0x10);
    CHECK(gp_devmem_htod((char *)p + off, &wrong, 1) == 0);
    CHECK(gp_mem_verify(GP_MEM_CUDA, p, len, seed, &d) == 0 && d.bad == 1 &&
          d.first_bad == off && d.got == wrong);
    /* memset through the driver */
    CHECK(gp_mem_set(GP_MEM_CUDA, p, 0xa7, len) == 0);
    CHECK(gp_mem_verify_const(GP_MEM_CUDA, p, len, 0xa7, &d) == 0 && d.bad == 0);
    CHECK(gp_mem_verify_const(GP_MEM_CUDA, p, len, 0xa8, &d) == 0 && d.bad == len);
    gp_mem_free(GP_MEM_CUDA, p);

    /* the pattern is never 0 and shifts by one byte are visible */
    size_t zeros = 0, same = 0;
    for (size_t i = 0; i < 1 << 20; ++i) {
        zeros += gp_pattern_byte(seed, i) == 0;
        same += gp_pattern_byte(seed, i) == gp_pattern_byte(seed, i + 1);
    }
    CHECK(zeros == 0);
    CHECK(same < (1 << 20) / 100);

    gp_devmem_fini();
    printf("devmem_selftest: %s\n", g_fail ? "FAILED" : "passed");
    return g_fail != 0;
}
