/* coll_layout: MPI_Bcast and MPI_Allgather of n doubles on device buffers,
 * described by a contiguous datatype or (--gaps) by a vector of n single
 * doubles with a gap after each, checked on the host (gaps untouched).
 * Which way coll/gdrpipe moved them is read from its counters by
 * expect-path.sh: buffers with gaps must be staged (on Open MPI 5 the
 * datatype engine would copy each double with a driver call of its own),
 * contiguous ones handed to Open MPI's algorithms (the broadcast at every
 * size, the allgather from coll_gdrpipe_device_moves_min bytes a block).
 * --only bcast|allgather runs one of them.
 *
 * usage: coll_layout [--gaps] [-n N] [--only bcast|allgather] */
#include "coll_check.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int gaps = 0, n = 4096, bcast = 1, allgather = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gaps")) {
            gaps = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "bcast") || !strcmp(argv[i + 1], "allgather"))) {
            bcast = !strcmp(argv[++i], "bcast");
            allgather = !bcast;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            n = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: coll_layout [--gaps] [-n N] [--only bcast|allgather]\n");
            return 2;
        }
    }
    if (cc_mem_init(CC_DEVICE) != 0) {
        return 1;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype t;
    if (gaps) {
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &t);
    } else {
        MPI_Type_contiguous(n, MPI_DOUBLE, &t);
    }
    MPI_Type_commit(&t);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    const size_t span = (size_t)extent / sizeof(double); /* 2n - 1 or n */
    long fails = 0;

    /* bcast from the last rank */
    const int root = size - 1;
    double *want = malloc(span * sizeof(double));
    for (size_t i = 0; i < span; i++) {
        want[i] = (!gaps || i % 2 == 0) ? cc_val(root, (long)i) : CC_SENTINEL;
    }
    if (bcast) {
        double *b = rank == root ? cc_dup(want, span) : cc_sentinels(span);
        MPI_Bcast(b, 1, t, root, MPI_COMM_WORLD);
        fails += cc_check(gaps ? "bcast(gaps)" : "bcast", n, b, want, span);
        cc_free(b);
    }

    /* allgather: block r of the result from rank r; the resized type
     * places the blocks one span apart */
    MPI_Datatype rt;
    MPI_Type_create_resized(t, 0, (MPI_Aint)(span * sizeof(double)), &rt);
    MPI_Type_commit(&rt);
    double *all = malloc(span * (size_t)size * sizeof(double));
    for (int r = 0; r < size; r++) {
        for (size_t i = 0; i < span; i++) {
            all[(size_t)r * span + i] = (!gaps || i % 2 == 0) ? cc_val(r, (long)i) : CC_SENTINEL;
        }
    }
    if (allgather) {
        double *s = cc_dup(all + (size_t)rank * span, span);
        double *r = cc_sentinels(span * (size_t)size);
        MPI_Allgather(s, 1, t, r, 1, gaps ? rt : t, MPI_COMM_WORLD);
        fails += cc_check(gaps ? "allgather(gaps)" : "allgather", n, r, all,
                          span * (size_t)size);
        cc_free(s);
        cc_free(r);
    }

    long total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_layout: %d ranks, %s, %d doubles: %s (%ld failed checks)\n", size,
               gaps ? "gaps" : "contiguous", n, total ? "FAILED" : "passed", total);
    }
    free(want);
    free(all);
    MPI_Type_free(&rt);
    MPI_Type_free(&t);
    MPI_Finalize();
    cc_mem_fini();
    return total != 0;
}
