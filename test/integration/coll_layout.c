/* coll_layout: MPI_Bcast and MPI_Allgather of n doubles on device buffers,
 * described by a contiguous datatype or (--gaps) by a vector of n single
 * doubles with a gap after each, checked on the host (gaps untouched).
 * Which way coll/gdrpipe moved them is read from its counters by
 * expect-path.sh: buffers with gaps must be staged (on Open MPI 5 the
 * datatype engine would copy each double with a driver call of its own),
 * contiguous ones handed to Open MPI's algorithms (the broadcast at every
 * size, the allgather from coll_gdrpipe_device_moves_min bytes a block) or
 * moved on the GPU. --only bcast|allgather runs one of them; --only with
 * another data-moving collective (allgatherv, alltoall, alltoallv, gather,
 * gatherv, scatter, scatterv) runs that one alone on MPI_DOUBLE, the v
 * forms with n - r doubles from or for rank r and a gap of one double
 * between blocks, every result checked (gaps untouched); --only
 * reduce_scatter or reduce_scatter_block runs that reduction (MPI_SUM of
 * doubles, rank q's block n - q or n doubles long).
 *
 * --in-place: allgather and allgatherv with MPI_IN_PLACE.
 *
 * --form nonblocking|persistent: a data-moving collective of --only (allgather
 * included) in that form: MPI_I... with other traffic between start and wait
 * (a host ring exchange and a nonblocking host allreduce), or MPI_..._init
 * started twice (the receive buffer reset between) and freed.
 * --gaps with --form: rank 0 receives an allgather into every other double
 * (a datatype with gaps; the others' are contiguous).
 *
 * usage: coll_layout [--gaps] [--in-place] [-n N] [--only COLLECTIVE]
 *                    [--form blocking|nonblocking|persistent] */
#include "coll_check.h"

#include <mpi.h>
#include <mpi-ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --in-place: allgather and allgatherv with MPI_IN_PLACE (each rank's own
 * block written into the receive buffer first) */
static int in_place;

/* --form: 0 blocking, 1 nonblocking, 2 persistent */
static int form;

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define MPI_Allgather_init MPIX_Allgather_init
#define MPI_Allgatherv_init MPIX_Allgatherv_init
#define MPI_Alltoall_init MPIX_Alltoall_init
#define MPI_Alltoallv_init MPIX_Alltoallv_init
#define MPI_Gather_init MPIX_Gather_init
#define MPI_Gatherv_init MPIX_Gatherv_init
#define MPI_Scatter_init MPIX_Scatter_init
#define MPI_Scatterv_init MPIX_Scatterv_init
#endif

/* the call in the form asked for: blocking B, nonblocking I or persistent P
 * (their requests in the caller's q) */
#define IN_FORM(B, I, P) \
    do {                    \
        if (form == 0) {    \
            B;              \
        } else if (form == 1) { \
            I;              \
        } else {            \
            P;              \
        }                   \
    } while (0)

/* other traffic while a nonblocking collective runs: a ring exchange of
 * host integers and a nonblocking allreduce of host integers */
static void meanwhile(int rank, int size)
{
    int out = rank, in = -1, sum = 0;
    MPI_Request q;
    MPI_Sendrecv(&out, 1, MPI_INT, (rank + 1) % size, 7, &in, 1, MPI_INT,
                 (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Iallreduce(&in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (sum != size * (size - 1) / 2) {
        fprintf(stderr, "coll_layout: rank %d: allreduce meanwhile gave %d\n", rank, sum);
        exit(1);
    }
}

static const char *const moves[] = {"allgather", "allgatherv", "alltoall",       "alltoallv",
                                     "gather",    "gatherv",    "scatter",        "scatterv",
                                     "reduce_scatter",          "reduce_scatter_block"};

/* MPI_Reduce_scatter(_block) with MPI_SUM: rank q gets the sums of block q
 * (n - q doubles in the plain form, n in the block form) of every rank's
 * values; failed checks */
static long one_reduce_scatter(int block, int n, int rank, int size)
{
    int *counts = malloc(sizeof(int) * (size_t)size), total = 0, at = 0;
    for (int q = 0; q < size; q++) {
        counts[q] = block ? n : (n - q > 1 ? n - q : 1);
        total += counts[q];
    }
    for (int q = 0; q < rank; q++) {
        at += counts[q];
    }
    double *sh = malloc(sizeof(double) * (size_t)total);
    double *want = malloc(sizeof(double) * (size_t)counts[rank]);
    for (int i = 0; i < total; i++) {
        sh[i] = cc_val(rank, i);
    }
    for (int i = 0; i < counts[rank]; i++) {
        want[i] = 0;
        for (int r = 0; r < size; r++) {
            want[i] += cc_val(r, at + i);
        }
    }
    double *sb = cc_dup(sh, (size_t)total), *rb = cc_sentinels((size_t)counts[rank]);
    if (block) {
        MPI_Reduce_scatter_block(sb, rb, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Reduce_scatter(sb, rb, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    long fails = cc_check(block ? "reduce_scatter_block" : "reduce_scatter", n, rb, want,
                          (size_t)counts[rank]);
    cc_free(sb);
    cc_free(rb);
    free(sh);
    free(want);
    free(counts);
    return fails;
}

/* block of rank r for rank q: n - r doubles in the v forms (n otherwise),
 * values from r (and, alltoall(v), q) */
static int vcount(int v, int n, int r)
{
    return v ? (n - r > 1 ? n - r : 1) : n;
}

/* blocks of count(r) doubles, one after another (gap 1 in the v forms):
 * displacements and the buffer's length */
static int layout(int v, int n, int size, int *counts, int *displs)
{
    int at = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = vcount(v, n, r);
        displs[r] = at;
        at += counts[r] + (v ? 1 : 0);
    }
    return at;
}

/* one data-moving collective on MPI_COMM_WORLD, rooted ones at the last
 * rank; failed checks */
static long one_move(const char *name, int n, int rank, int size)
{
    const int v = name[strlen(name) - 1] == 'v', root = size - 1;
    const int a2a = !strncmp(name, "alltoall", 8), gather = !strncmp(name, "gather", 6);
    const int scatter = !strncmp(name, "scatter", 7);
    const size_t ints = sizeof(int) * (size_t)size;
    int *counts = malloc(ints), *displs = malloc(ints), *scounts = malloc(ints);
    int *sdispls = malloc(ints);
    /* receive side: from each rank r; send side: to each rank q */
    const int rlen = layout(v, n, size, counts, displs);
    int slen = vcount(v, n, rank);
    if (a2a) { /* rank sends count(rank) to everyone; receives count(r) from r */
        for (int q = 0; q < size; q++) {
            scounts[q] = vcount(v, n, rank);
            sdispls[q] = q * (vcount(v, n, rank) + (v ? 1 : 0));
        }
        slen = size * (vcount(v, n, rank) + (v ? 1 : 0));
    } else if (scatter) { /* the root sends count(q) to q */
        memcpy(scounts, counts, sizeof(int) * (size_t)size);
        memcpy(sdispls, displs, sizeof(int) * (size_t)size);
        slen = rlen;
    }
    double *sh = malloc(sizeof(double) * (size_t)slen);
    for (int i = 0; i < slen; i++) {
        sh[i] = CC_SENTINEL;
    }
    if (a2a || scatter) {
        for (int q = 0; q < size; q++) {
            for (int i = 0; i < scounts[q]; i++) {
                sh[sdispls[q] + i] = cc_val(rank * 100 + q, i);
            }
        }
    } else {
        for (int i = 0; i < slen; i++) {
            sh[i] = cc_val(rank, i);
        }
    }
    /* what this rank receives */
    const int rcount = scatter ? vcount(v, n, rank) : rlen;
    double *want = malloc(sizeof(double) * (size_t)rcount);
    for (int i = 0; i < rcount; i++) {
        want[i] = CC_SENTINEL;
    }
    if (scatter) {
        for (int i = 0; i < rcount; i++) {
            want[i] = cc_val(root * 100 + rank, i);
        }
    } else if (!gather || rank == root) {
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < counts[r]; i++) {
                want[displs[r] + i] = a2a ? cc_val(r * 100 + rank, i) : cc_val(r, i);
            }
        }
    }
    double *sb = cc_dup(sh, (size_t)slen), *rb = cc_sentinels((size_t)rcount);
    const int me = vcount(v, n, rank);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info ni = MPI_INFO_NULL;
    MPI_Request q = MPI_REQUEST_NULL;
    if (!strncmp(name, "allgather", 9) && in_place) {
        cc_put(rb + displs[rank], sh, sizeof(double) * (size_t)me);
    }
    if (!strcmp(name, "allgather") && in_place) {
        IN_FORM(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, n, MPI_DOUBLE, w),
                MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, n, MPI_DOUBLE, w, &q),
                MPI_Allgather_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, n, MPI_DOUBLE, w, ni,
                                   &q));
    } else if (!strcmp(name, "allgather")) {
        IN_FORM(MPI_Allgather(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, w),
                MPI_Iallgather(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, w, &q),
                MPI_Allgather_init(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, w, ni, &q));
    } else if (!strcmp(name, "allgatherv") && in_place) {
        IN_FORM(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, counts, displs,
                                  MPI_DOUBLE, w),
                MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, counts, displs,
                                MPI_DOUBLE, w, &q),
                MPI_Allgatherv_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, counts, displs,
                                    MPI_DOUBLE, w, ni, &q));
    } else if (!strcmp(name, "allgatherv")) {
        IN_FORM(MPI_Allgatherv(sb, me, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE, w),
                MPI_Iallgatherv(sb, me, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE, w, &q),
                MPI_Allgatherv_init(sb, me, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE, w, ni,
                                    &q));
    } else if (!strcmp(name, "alltoall")) {
        IN_FORM(MPI_Alltoall(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, w),
                MPI_Ialltoall(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, w, &q),
                MPI_Alltoall_init(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, w, ni, &q));
    } else if (!strcmp(name, "alltoallv")) {
        IN_FORM(MPI_Alltoallv(sb, scounts, sdispls, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE,
                              w),
                MPI_Ialltoallv(sb, scounts, sdispls, MPI_DOUBLE, rb, counts, displs,
                               MPI_DOUBLE, w, &q),
                MPI_Alltoallv_init(sb, scounts, sdispls, MPI_DOUBLE, rb, counts, displs,
                                   MPI_DOUBLE, w, ni, &q));
    } else if (!strcmp(name, "gather")) {
        IN_FORM(MPI_Gather(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, root, w),
                MPI_Igather(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, root, w, &q),
                MPI_Gather_init(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, root, w, ni, &q));
    } else if (!strcmp(name, "gatherv")) {
        IN_FORM(MPI_Gatherv(sb, me, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE, root, w),
                MPI_Igatherv(sb, me, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE, root, w, &q),
                MPI_Gatherv_init(sb, me, MPI_DOUBLE, rb, counts, displs, MPI_DOUBLE, root, w,
                                 ni, &q));
    } else if (!strcmp(name, "scatter")) {
        IN_FORM(MPI_Scatter(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, root, w),
                MPI_Iscatter(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, root, w, &q),
                MPI_Scatter_init(sb, n, MPI_DOUBLE, rb, n, MPI_DOUBLE, root, w, ni, &q));
    } else {
        IN_FORM(MPI_Scatterv(sb, scounts, sdispls, MPI_DOUBLE, rb, me, MPI_DOUBLE, root, w),
                MPI_Iscatterv(sb, scounts, sdispls, MPI_DOUBLE, rb, me, MPI_DOUBLE, root, w,
                              &q),
                MPI_Scatterv_init(sb, scounts, sdispls, MPI_DOUBLE, rb, me, MPI_DOUBLE, root, w,
                                  ni, &q));
    }
    long fails = 0;
    for (int round = 0; round < (form == 2 ? 2 : 1); round++) {
        if (round > 0) { /* the receive buffer back to sentinels (and own block) */
            double *reset = malloc(sizeof(double) * (size_t)rcount);
            for (int i = 0; i < rcount; i++) {
                reset[i] = CC_SENTINEL;
            }
            cc_put(rb, reset, sizeof(double) * (size_t)rcount);
            free(reset);
            if (!strncmp(name, "allgather", 9) && in_place) {
                cc_put(rb + displs[rank], sh, sizeof(double) * (size_t)me);
            }
        }
        if (form == 2) {
            MPI_Start(&q);
        }
        if (form != 0) {
            meanwhile(rank, size);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        fails += (gather && rank != root) ? 0 : cc_check(name, n, rb, want, (size_t)rcount);
    }
    if (form == 2) {
        MPI_Request_free(&q);
    }
    cc_free(sb);
    cc_free(rb);
    free(sh);
    free(want);
    free(counts);
    free(displs);
    free(scounts);
    free(sdispls);
    return fails;
}

/* --gaps --form: an allgather of n doubles per rank where rank 0 receives
 * into every other double (a datatype with gaps) and the others into
 * contiguous doubles; failed checks */
static long gap_allgather(int n, int rank, int size)
{
    const int stride = rank == 0 ? 2 : 1, rlen = n * size * stride;
    MPI_Datatype every_other, rt = MPI_DOUBLE;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 2 * sizeof(double), &every_other);
    MPI_Type_commit(&every_other);
    if (rank == 0) {
        rt = every_other;
    }
    double *sh = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)rlen);
    for (int i = 0; i < n; i++) {
        sh[i] = cc_val(rank, i);
    }
    for (int i = 0; i < rlen; i++) {
        want[i] = CC_SENTINEL;
    }
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < n; i++) {
            want[(size_t)(r * n + i) * stride] = cc_val(r, i);
        }
    }
    double *sb = cc_dup(sh, (size_t)n), *rb = cc_sentinels((size_t)rlen);
    MPI_Request q = MPI_REQUEST_NULL;
    MPI_Comm w = MPI_COMM_WORLD;
    IN_FORM(MPI_Allgather(sb, n, MPI_DOUBLE, rb, n, rt, w),
            MPI_Iallgather(sb, n, MPI_DOUBLE, rb, n, rt, w, &q),
            MPI_Allgather_init(sb, n, MPI_DOUBLE, rb, n, rt, w, MPI_INFO_NULL, &q));
    if (form == 2) {
        MPI_Start(&q);
    }
    if (form != 0) {
        meanwhile(rank, size);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    long fails = cc_check("allgather(gaps on rank 0)", n, rb, want, (size_t)rlen);
    if (form == 2) {
        MPI_Request_free(&q);
    }
    MPI_Type_free(&every_other);
    cc_free(sb);
    cc_free(rb);
    free(sh);
    free(want);
    return fails;
}

int main(int argc, char **argv)
{
    int gaps = 0, n = 4096, bcast = 1, allgather = 1;
    const char *move = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gaps")) {
            gaps = 1;
        } else if (!strcmp(argv[i], "--in-place")) {
            in_place = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "bcast") || !strcmp(argv[i + 1], "allgather"))) {
            bcast = !strcmp(argv[++i], "bcast");
            allgather = !bcast;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            for (size_t k = 0; k < sizeof(moves) / sizeof(moves[0]); k++) {
                move = !strcmp(argv[i + 1], moves[k]) ? moves[k] : move;
            }
            if (move == NULL) {
                fprintf(stderr, "coll_layout: unknown collective %s\n", argv[i + 1]);
                return 2;
            }
            bcast = allgather = 0;
            ++i;
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            n = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--form") && i + 1 < argc) {
            ++i;
            form = !strcmp(argv[i], "nonblocking") ? 1 : !strcmp(argv[i], "persistent") ? 2 : 0;
            if (form == 0 && strcmp(argv[i], "blocking") != 0) {
                fprintf(stderr, "coll_layout: unknown form %s\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: coll_layout [--gaps] [--in-place] [-n N] [--only COLLECTIVE] "
                            "[--form blocking|nonblocking|persistent]\n");
            return 2;
        }
    }
    if (form != 0 && move == NULL && allgather && !bcast) {
        move = "allgather"; /* the forms go through one_move */
        allgather = 0;
    }
    if (form != 0 && move == NULL) {
        fprintf(stderr, "coll_layout: --form goes with --only\n");
        return 2;
    }
    const int gap_form = gaps && form != 0 && move != NULL && !strcmp(move, "allgather");
    if (move != NULL && gaps && !gap_form) {
        fprintf(stderr, "coll_layout: --gaps goes with bcast and allgather only\n");
        return 2;
    }
    if (cc_mem_init(CC_DEVICE) != 0) {
        return 1;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Datatype t;
    if (gaps && !gap_form) {
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
        if (in_place) {
            cc_put(r + (size_t)rank * span, all + (size_t)rank * span, span * sizeof(double));
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, 1, gaps ? rt : t,
                          MPI_COMM_WORLD);
        } else {
            MPI_Allgather(s, 1, t, r, 1, gaps ? rt : t, MPI_COMM_WORLD);
        }
        fails += cc_check(gaps ? "allgather(gaps)" : "allgather", n, r, all,
                          span * (size_t)size);
        cc_free(s);
        cc_free(r);
    }

    if (gap_form) {
        fails += gap_allgather(n, rank, size);
    } else if (move != NULL && !strncmp(move, "reduce_scatter", 14)) {
        fails += one_reduce_scatter(!strcmp(move, "reduce_scatter_block"), n, rank, size);
    } else if (move != NULL) {
        fails += one_move(move, n, rank, size);
    }
    long total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("coll_layout: %d ranks, %s%s%s, %d doubles: %s (%ld failed checks)\n", size,
               move != NULL ? move : gaps ? "gaps" : "contiguous", gap_form ? " with gaps" : "",
               form == 1 ? " nonblocking" : form == 2 ? " persistent" : "", n,
               total ? "FAILED" : "passed", total);
    }
    free(want);
    free(all);
    MPI_Type_free(&rt);
    MPI_Type_free(&t);
    MPI_Finalize();
    cc_mem_fini();
    return total != 0;
}
