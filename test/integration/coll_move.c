/* coll_verify: the collectives that move data without reducing it, each in
 * its blocking and nonblocking form. Block r of a send buffer holds values
 * of source (sender, r); v/w forms leave gaps of two elements between the
 * blocks, which must keep their sentinels. */
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    MPI_Comm comm;
    int rank, size, n, nb;
    char what[96];
} mv_t;

static const char *name(mv_t *m, const char *coll)
{
    snprintf(m->what, sizeof(m->what), "%s%s", m->nb ? "I" : "", coll);
    return m->what;
}

static double *hmalloc(size_t n)
{
    double *h = malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        h[i] = CC_SENTINEL;
    }
    return h;
}

/* counts n + (r % 3), displacements with gaps of 2 */
static void layout(const mv_t *m, int *counts, int *displs, int base)
{
    int off = 0;
    for (int r = 0; r < m->size; r++) {
        counts[r] = base + r % 3;
        displs[r] = off;
        off += counts[r] + 2;
    }
}

static long t_bcast(mv_t *m, int root)
{
    double *h = hmalloc(m->n), *want = hmalloc(m->n);
    for (int i = 0; i < m->n; i++) {
        want[i] = cc_val(root, i);
    }
    double *b = m->rank == root ? cc_dup(want, m->n) : cc_sentinels(m->n);
    CC_CALL(m->nb, MPI_Bcast(b, m->n, MPI_DOUBLE, root, m->comm),
            MPI_Ibcast(b, m->n, MPI_DOUBLE, root, m->comm, CC_REQ));
    long f = cc_check(name(m, "bcast"), m->n, b, want, m->n);
    /* a strided type: every other element, the others untouched */
    MPI_Datatype vec;
    MPI_Type_vector(m->n, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double *want2 = hmalloc(2 * m->n - 1);
    for (int i = 0; i < m->n; i++) {
        want2[2 * i] = cc_val(root, i);
    }
    double *b2 = m->rank == root ? cc_dup(want2, 2 * m->n - 1) : cc_sentinels(2 * m->n - 1);
    CC_CALL(m->nb, MPI_Bcast(b2, 1, vec, root, m->comm),
            MPI_Ibcast(b2, 1, vec, root, m->comm, CC_REQ));
    f += cc_check(name(m, "bcast(vector)"), m->n, b2, want2, 2 * m->n - 1);
    MPI_Type_free(&vec);
    cc_free(b);
    cc_free(b2);
    free(h);
    free(want);
    free(want2);
    return f;
}

static long t_gather(mv_t *m, int root, int in_place)
{
    int n = m->n, p = m->size;
    double *mine = hmalloc(n), *want = hmalloc((size_t)n * p);
    for (int i = 0; i < n; i++) {
        mine[i] = cc_val(m->rank, i);
    }
    for (int r = 0; r < p; r++) {
        for (int i = 0; i < n; i++) {
            want[(size_t)r * n + i] = cc_val(r, i);
        }
    }
    double *s = cc_dup(mine, n), *r = NULL;
    long f = 0;
    if (m->rank == root) {
        r = cc_sentinels((size_t)n * p);
        if (in_place) {
            cc_put(r + (size_t)root * n, mine, n * sizeof(double));
        }
    }
    const void *sb = in_place && m->rank == root ? MPI_IN_PLACE : s;
    CC_CALL(m->nb, MPI_Gather(sb, n, MPI_DOUBLE, r, n, MPI_DOUBLE, root, m->comm),
            MPI_Igather(sb, n, MPI_DOUBLE, r, n, MPI_DOUBLE, root, m->comm, CC_REQ));
    if (m->rank == root) {
        f += cc_check(name(m, in_place ? "gather(in place)" : "gather"), n, r, want,
                      (size_t)n * p);
        cc_free(r);
    }
    cc_free(s);
    free(mine);
    free(want);
    return f;
}

static long t_gatherv(mv_t *m, int root)
{
    int p = m->size, counts[64], displs[64];
    layout(m, counts, displs, m->n);
    int total = displs[p - 1] + counts[p - 1];
    double *mine = hmalloc(counts[m->rank]), *want = hmalloc(total);
    for (int i = 0; i < counts[m->rank]; i++) {
        mine[i] = cc_val(m->rank, i);
    }
    for (int r = 0; r < p; r++) {
        for (int i = 0; i < counts[r]; i++) {
            want[displs[r] + i] = cc_val(r, i);
        }
    }
    double *s = cc_dup(mine, counts[m->rank]), *r = NULL;
    long f = 0;
    if (m->rank == root) {
        r = cc_sentinels(total);
    }
    CC_CALL(m->nb,
            MPI_Gatherv(s, counts[m->rank], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, root,
                        m->comm),
            MPI_Igatherv(s, counts[m->rank], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, root,
                         m->comm, CC_REQ));
    if (m->rank == root) {
        f += cc_check(name(m, "gatherv"), m->n, r, want, total);
        cc_free(r);
    }
    cc_free(s);
    free(mine);
    free(want);
    return f;
}

static long t_scatter(mv_t *m, int root, int v)
{
    int p = m->size, counts[64], displs[64];
    layout(m, counts, displs, m->n);
    if (!v) {
        for (int r = 0; r < p; r++) {
            counts[r] = m->n;
            displs[r] = r * m->n;
        }
    }
    int total = displs[p - 1] + counts[p - 1];
    double *all = hmalloc(total), *want = hmalloc(counts[m->rank]);
    for (int r = 0; r < p; r++) {
        for (int i = 0; i < counts[r]; i++) {
            all[displs[r] + i] = cc_val(r, i);
        }
    }
    for (int i = 0; i < counts[m->rank]; i++) {
        want[i] = cc_val(m->rank, i);
    }
    double *s = m->rank == root ? cc_dup(all, total) : NULL;
    double *r = cc_sentinels(counts[m->rank]);
    if (v) {
        CC_CALL(m->nb,
                MPI_Scatterv(s, counts, displs, MPI_DOUBLE, r, counts[m->rank], MPI_DOUBLE, root,
                             m->comm),
                MPI_Iscatterv(s, counts, displs, MPI_DOUBLE, r, counts[m->rank], MPI_DOUBLE,
                              root, m->comm, CC_REQ));
    } else {
        CC_CALL(m->nb, MPI_Scatter(s, m->n, MPI_DOUBLE, r, m->n, MPI_DOUBLE, root, m->comm),
                MPI_Iscatter(s, m->n, MPI_DOUBLE, r, m->n, MPI_DOUBLE, root, m->comm, CC_REQ));
    }
    long f = cc_check(name(m, v ? "scatterv" : "scatter"), m->n, r, want, counts[m->rank]);
    if (s != NULL) {
        cc_free(s);
    }
    cc_free(r);
    free(all);
    free(want);
    return f;
}

static long t_allgather(mv_t *m, int mode /* 0 plain, 1 in place, 2 v */)
{
    int p = m->size, counts[64], displs[64];
    layout(m, counts, displs, m->n);
    if (mode != 2) {
        for (int r = 0; r < p; r++) {
            counts[r] = m->n;
            displs[r] = r * m->n;
        }
    }
    int total = displs[p - 1] + counts[p - 1], me = m->rank;
    double *mine = hmalloc(counts[me]), *want = hmalloc(total);
    for (int i = 0; i < counts[me]; i++) {
        mine[i] = cc_val(me, i);
    }
    for (int r = 0; r < p; r++) {
        for (int i = 0; i < counts[r]; i++) {
            want[displs[r] + i] = cc_val(r, i);
        }
    }
    double *s = cc_dup(mine, counts[me]), *r = cc_sentinels(total);
    const char *what = "allgather";
    if (mode == 1) {
        what = "allgather(in place)";
        cc_put(r + displs[me], mine, counts[me] * sizeof(double));
        CC_CALL(m->nb,
                MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, m->n, MPI_DOUBLE, m->comm),
                MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, m->n, MPI_DOUBLE, m->comm,
                               CC_REQ));
    } else if (mode == 2) {
        what = "allgatherv";
        CC_CALL(m->nb,
                MPI_Allgatherv(s, counts[me], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, m->comm),
                MPI_Iallgatherv(s, counts[me], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE,
                                m->comm, CC_REQ));
    } else {
        CC_CALL(m->nb, MPI_Allgather(s, m->n, MPI_DOUBLE, r, m->n, MPI_DOUBLE, m->comm),
                MPI_Iallgather(s, m->n, MPI_DOUBLE, r, m->n, MPI_DOUBLE, m->comm, CC_REQ));
    }
    long f = cc_check(name(m, what), m->n, r, want, total);
    cc_free(s);
    cc_free(r);
    free(mine);
    free(want);
    return f;
}

/* elements from rank a to rank b */
static int a2a_count(int n, int a, int b, int v)
{
    return v ? n + (a + b) % 3 : n;
}

static long t_alltoall(mv_t *m, int mode /* 0 plain, 1 in place, 2 v, 3 w */)
{
    int p = m->size, me = m->rank, v = mode >= 2;
    int sc[64], sd[64], rc[64], rd[64], sdb[64], rdb[64];
    MPI_Datatype types[64];
    int so = 0, ro = 0;
    for (int r = 0; r < p; r++) {
        sc[r] = a2a_count(m->n, me, r, v);
        rc[r] = a2a_count(m->n, r, me, v);
        sd[r] = so;
        rd[r] = ro;
        sdb[r] = so * (int)sizeof(double);
        rdb[r] = ro * (int)sizeof(double);
        types[r] = MPI_DOUBLE;
        so += sc[r] + (v ? 2 : 0);
        ro += rc[r] + (v ? 2 : 0);
    }
    double *hs = hmalloc(so), *want = hmalloc(ro);
    for (int r = 0; r < p; r++) {
        for (int i = 0; i < sc[r]; i++) {
            hs[sd[r] + i] = cc_val((long)me * 64 + r, i);
        }
        for (int i = 0; i < rc[r]; i++) {
            want[rd[r] + i] = cc_val((long)r * 64 + me, i);
        }
    }
    double *s = cc_dup(hs, so), *r = cc_sentinels(ro);
    const char *what = "alltoall";
    int n = m->n;
    switch (mode) {
    case 0:
        CC_CALL(m->nb, MPI_Alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, m->comm),
                MPI_Ialltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, m->comm, CC_REQ));
        break;
    case 1:
        what = "alltoall(in place)";
        cc_put(r, hs, (size_t)so * sizeof(double));
        /* Open MPI 4.1 has no nonblocking in-place alltoall: blocking only */
        MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_DOUBLE, m->comm);
        break;
    case 2:
        what = "alltoallv";
        CC_CALL(m->nb, MPI_Alltoallv(s, sc, sd, MPI_DOUBLE, r, rc, rd, MPI_DOUBLE, m->comm),
                MPI_Ialltoallv(s, sc, sd, MPI_DOUBLE, r, rc, rd, MPI_DOUBLE, m->comm, CC_REQ));
        break;
    default:
        what = "alltoallw";
        CC_CALL(m->nb, MPI_Alltoallw(s, sc, sdb, types, r, rc, rdb, types, m->comm),
                MPI_Ialltoallw(s, sc, sdb, types, r, rc, rdb, types, m->comm, CC_REQ));
        break;
    }
    long f = cc_check(name(m, what), n, r, want, ro);
    cc_free(s);
    cc_free(r);
    free(hs);
    free(want);
    return f;
}

long cc_run_move(MPI_Comm comm, int n)
{
    mv_t m = {.comm = comm, .n = n};
    MPI_Comm_rank(comm, &m.rank);
    MPI_Comm_size(comm, &m.size);
    long f = 0;
    for (m.nb = 0; m.nb < 2; m.nb++) {
        f += t_bcast(&m, 0) + t_bcast(&m, m.size - 1);
        f += t_gather(&m, m.size - 1, 0) + t_gather(&m, 0, 1) + t_gatherv(&m, m.size - 1);
        f += t_scatter(&m, 0, 0) + t_scatter(&m, m.size - 1, 1);
        f += t_allgather(&m, 0) + t_allgather(&m, 1) + t_allgather(&m, 2);
        f += t_alltoall(&m, 0) + t_alltoall(&m, 2) + t_alltoall(&m, 3);
        if (!m.nb) {
            f += t_alltoall(&m, 1);
        }
    }
    return f;
}
