/* copy_verify: Open MPI 4.1's copy of a datatype's content
 * (opal_datatype_copy_content_same_ddt) as the interposer defines it
 * (plugin/openmpi/ompi_copy.c), called the way Open MPI's collective
 * algorithms call it: device -> device, host -> device and device -> host,
 * for a contiguous type (one copy) and a vector with gaps (staged), the
 * destination's gaps left as they were; host -> host untouched by gdrpipe.
 * Device memory is read back through the driver (devmem.h). Exit status 0
 * when every check passed. */
#include "devmem.h"

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 1000, BLOCK = 3, STRIDE = 5 };

static int failures;

static void fill(int *p, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = seed * 100000 + (int)i;
    }
}

/* want: the destination after copying count elements of a type whose
 * element i covers ints [i*stride, i*stride+block) */
static void expect(int *want, const int *dst0, const int *src, size_t n, int block, int stride)
{
    memcpy(want, dst0, n * sizeof(int));
    for (size_t e = 0; e < COUNT; e++) {
        for (int b = 0; b < block; b++) {
            want[e * stride + b] = src[e * stride + b];
        }
    }
}

static void one(const char *what, MPI_Datatype dt, int block, int stride, int dst_dev, int src_dev)
{
    const size_t n = (size_t)COUNT * stride;
    int *src = malloc(n * sizeof(int)), *dst0 = malloc(n * sizeof(int));
    int *want = malloc(n * sizeof(int)), *got = malloc(n * sizeof(int));
    fill(src, n, 1);
    fill(dst0, n, 2);
    expect(want, dst0, src, n, block, stride);
    void *s = src, *d = got;
    memcpy(got, dst0, n * sizeof(int));
    if (src_dev) {
        s = gp_devmem_alloc(n * sizeof(int));
        gp_devmem_htod(s, src, n * sizeof(int));
    }
    if (dst_dev) {
        d = gp_devmem_alloc(n * sizeof(int));
        gp_devmem_htod(d, dst0, n * sizeof(int));
    }
    const ompi_datatype_t *t = (const ompi_datatype_t *)dt;
    int rc = opal_datatype_copy_content_same_ddt(&t->super, COUNT, d, s);
    if (dst_dev) {
        gp_devmem_dtoh(got, d, n * sizeof(int));
    }
    if (rc != OPAL_SUCCESS || memcmp(got, want, n * sizeof(int)) != 0) {
        fprintf(stderr, "copy_verify: %s %s -> %s: %s\n", what, src_dev ? "device" : "host",
                dst_dev ? "device" : "host", rc != OPAL_SUCCESS ? "failed" : "wrong bytes");
        failures++;
    }
    if (src_dev) {
        gp_devmem_free(s);
    }
    if (dst_dev) {
        gp_devmem_free(d);
    }
    free(src);
    free(dst0);
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (gp_devmem_init(-1, -1) != 0) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Datatype contig, vec;
    MPI_Type_contiguous(STRIDE, MPI_INT, &contig);
    MPI_Type_commit(&contig);
    /* one element: BLOCK ints, then a gap up to STRIDE */
    MPI_Datatype v0;
    MPI_Type_vector(1, BLOCK, STRIDE, MPI_INT, &v0);
    MPI_Type_create_resized(v0, 0, STRIDE * (MPI_Aint)sizeof(int), &vec);
    MPI_Type_commit(&vec);
    for (int dd = 0; dd < 2; dd++) {
        for (int sd = 0; sd < 2; sd++) {
            one("contiguous", contig, STRIDE, STRIDE, dd, sd);
            one("vector", vec, BLOCK, STRIDE, dd, sd);
        }
    }
    MPI_Type_free(&contig);
    MPI_Type_free(&v0);
    MPI_Type_free(&vec);
    printf("copy_verify: %s (%d failed checks)\n", failures == 0 ? "passed" : "FAILED", failures);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
