/* Buffers of coll_verify in device memory (through the CUDA driver,
 * devmem.h) or host memory, and the result check. */
#include "coll_check.h"

#include "devmem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cc_mem_t cc_mem;

int cc_mem_init(cc_mem_t mem)
{
    cc_mem = mem;
    return mem == CC_DEVICE ? gp_devmem_init(-1, -1) : 0;
}

void cc_mem_fini(void)
{
    if (cc_mem == CC_DEVICE) {
        gp_devmem_fini();
    }
}

void *cc_alloc(size_t bytes)
{
    void *p = cc_mem == CC_DEVICE ? gp_devmem_alloc(bytes) : malloc(bytes ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "coll_verify: no memory for %zu bytes\n", bytes);
        exit(1);
    }
    return p;
}

void cc_free(void *buf)
{
    if (cc_mem == CC_DEVICE) {
        gp_devmem_free(buf);
    } else {
        free(buf);
    }
}

void cc_put(void *buf, const void *host, size_t bytes)
{
    if (cc_mem == CC_HOST) {
        memcpy(buf, host, bytes);
    } else if (bytes > 0 && gp_devmem_htod(buf, host, bytes) != 0) {
        exit(1);
    }
}

void cc_get(void *host, const void *buf, size_t bytes)
{
    if (cc_mem == CC_HOST) {
        memcpy(host, buf, bytes);
    } else if (bytes > 0 && gp_devmem_dtoh(host, buf, bytes) != 0) {
        exit(1);
    }
}

double *cc_dup(const double *host, size_t n)
{
    double *b = cc_alloc(n * sizeof(double));
    cc_put(b, host, n * sizeof(double));
    return b;
}

double *cc_sentinels(size_t n)
{
    double *h = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        h[i] = CC_SENTINEL;
    }
    double *b = cc_dup(h, n);
    free(h);
    return b;
}

long cc_check(const char *what, int n, const double *buf, const double *want, size_t len)
{
    double *got = malloc((len ? len : 1) * sizeof(double));
    long bad = 0;
    cc_get(got, buf, len * sizeof(double));
    for (size_t i = 0; i < len; i++) {
        if (got[i] != want[i]) {
            int rank;
            MPI_Comm_rank(MPI_COMM_WORLD, &rank);
            fprintf(stderr, "coll_verify: rank %d: %s (%d elements): element %zu is %.1f, expected %.1f\n",
                    rank, what, n, i, got[i], want[i]);
            bad = 1;
            break;
        }
    }
    free(got);
    return bad;
}
