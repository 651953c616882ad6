/* coll_verify: reductions (reduce, allreduce, scan, exscan, reduce_scatter,
 * reduce_scatter_block, reduce_local; blocking and nonblocking; MPI_IN_PLACE)
 * over several predefined types and operations. Element i of rank r holds
 * a small integer gen(r, i), exact in every type, so that the expected
 * result is computed on the host in long long and compared exactly. */
#include "coll_check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    MPI_Datatype type;
    MPI_Op op;
    size_t size; /* bytes per element */
    int kind;    /* 0 double, 1 float, 2 int, 3 long long, 4 unsigned char, 5 2int (maxloc) */
} red_t;

static const red_t *cases(int *n)
{
    static red_t c[10];
    int k = 0;
    c[k++] = (red_t){"double sum", MPI_DOUBLE, MPI_SUM, sizeof(double), 0};
    c[k++] = (red_t){"double max", MPI_DOUBLE, MPI_MAX, sizeof(double), 0};
    c[k++] = (red_t){"double prod", MPI_DOUBLE, MPI_PROD, sizeof(double), 0};
    c[k++] = (red_t){"float min", MPI_FLOAT, MPI_MIN, sizeof(float), 1};
    c[k++] = (red_t){"int sum", MPI_INT, MPI_SUM, sizeof(int), 2};
    c[k++] = (red_t){"int bxor", MPI_INT, MPI_BXOR, sizeof(int), 2};
    c[k++] = (red_t){"long long max", MPI_LONG_LONG, MPI_MAX, sizeof(long long), 3};
    c[k++] = (red_t){"unsigned char bor", MPI_UNSIGNED_CHAR, MPI_BOR, 1, 4};
    c[k++] = (red_t){"2int maxloc", MPI_2INT, MPI_MAXLOC, 2 * sizeof(int), 5};
    *n = k;
    return c;
}

static long long gen(int r, long i)
{
    return ((r + 1) * 7 + i * 3) % 11 + 1;
}

/* element i of a host array of the case's type, set to value v (for maxloc:
 * value v at index `loc`) */
static void put_el(const red_t *c, void *a, long i, long long v, int loc)
{
    switch (c->kind) {
    case 0: ((double *)a)[i] = (double)v; break;
    case 1: ((float *)a)[i] = (float)v; break;
    case 2: ((int *)a)[i] = (int)v; break;
    case 3: ((long long *)a)[i] = v; break;
    case 4: ((unsigned char *)a)[i] = (unsigned char)v; break;
    default: ((int *)a)[2 * i] = (int)v; ((int *)a)[2 * i + 1] = loc; break;
    }
}

/* the reduction of value b into a (with locations for maxloc) */
static long long fold(const red_t *c, long long a, long long b, int *aloc, int bloc)
{
    if (c->op == MPI_SUM) return a + b;
    if (c->op == MPI_PROD) return a * b;
    if (c->op == MPI_MAX) return a > b ? a : b;
    if (c->op == MPI_MIN) return a < b ? a : b;
    if (c->op == MPI_BXOR) return a ^ b;
    if (c->op == MPI_BOR) return a | b;
    /* maxloc: the larger value, the smaller location on a tie */
    if (b > a || (b == a && bloc < *aloc)) {
        *aloc = bloc;
        return b;
    }
    return a;
}

/* host array of the expected reduction over ranks lo..hi-1 of elements
 * [first, first + n) */
static void *expect(const red_t *c, int lo, int hi, long first, int n)
{
    void *w = calloc(n ? n : 1, c->size);
    for (int i = 0; i < n; i++) {
        long long v = gen(lo, first + i);
        int loc = lo;
        for (int r = lo + 1; r < hi; r++) {
            v = fold(c, v, gen(r, first + i), &loc, r);
        }
        put_el(c, w, i, v, loc);
    }
    return w;
}

static void *inputs(const red_t *c, int rank, long first, int n)
{
    void *h = calloc(n ? n : 1, c->size);
    for (int i = 0; i < n; i++) {
        put_el(c, h, i, gen(rank, first + i), rank);
    }
    return h;
}

static void *dev_of(const void *h, size_t bytes)
{
    void *d = cc_alloc(bytes);
    cc_put(d, h, bytes);
    return d;
}

static long check(const red_t *c, const char *coll, int nb, int n, const void *d,
                  const void *want)
{
    size_t bytes = (size_t)n * c->size;
    void *got = malloc(bytes ? bytes : 1);
    cc_get(got, d, bytes);
    long bad = memcmp(got, want, bytes) != 0;
    if (bad) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "coll_verify: rank %d: %s%s %s (%d elements): wrong result\n", rank,
                nb ? "I" : "", coll, c->name, n);
    }
    free(got);
    return bad;
}

static long one_case(MPI_Comm comm, const red_t *c, int n, int nb)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    size_t bytes = (size_t)n * c->size;
    long f = 0;
    void *in = inputs(c, rank, 0, n), *all = expect(c, 0, p, 0, n);
    void *s = dev_of(in, bytes), *r = cc_alloc(bytes ? bytes : 1);

    CC_CALL(nb, MPI_Allreduce(s, r, n, c->type, c->op, comm),
            MPI_Iallreduce(s, r, n, c->type, c->op, comm, CC_REQ));
    f += check(c, "allreduce", nb, n, r, all);
    cc_put(r, in, bytes);
    CC_CALL(nb, MPI_Allreduce(MPI_IN_PLACE, r, n, c->type, c->op, comm),
            MPI_Iallreduce(MPI_IN_PLACE, r, n, c->type, c->op, comm, CC_REQ));
    f += check(c, "allreduce(in place)", nb, n, r, all);

    int root = p - 1;
    void *rr = rank == root ? r : NULL;
    CC_CALL(nb, MPI_Reduce(s, rr, n, c->type, c->op, root, comm),
            MPI_Ireduce(s, rr, n, c->type, c->op, root, comm, CC_REQ));
    if (rank == root) {
        f += check(c, "reduce", nb, n, r, all);
    }
    cc_put(r, in, bytes); /* rank 0's input for the in-place reduce */
    const void *sr = rank == 0 ? MPI_IN_PLACE : s;
    CC_CALL(nb, MPI_Reduce(sr, r, n, c->type, c->op, 0, comm),
            MPI_Ireduce(sr, r, n, c->type, c->op, 0, comm, CC_REQ));
    if (rank == 0) {
        f += check(c, "reduce(in place)", nb, n, r, all);
    }

    void *want = expect(c, 0, rank + 1, 0, n);
    CC_CALL(nb, MPI_Scan(s, r, n, c->type, c->op, comm),
            MPI_Iscan(s, r, n, c->type, c->op, comm, CC_REQ));
    f += check(c, "scan", nb, n, r, want);
    free(want);
    if (rank > 0) {
        want = expect(c, 0, rank, 0, n);
    } else {
        want = NULL;
    }
    CC_CALL(nb, MPI_Exscan(s, r, n, c->type, c->op, comm),
            MPI_Iexscan(s, r, n, c->type, c->op, comm, CC_REQ));
    if (rank > 0) {
        f += check(c, "exscan", nb, n, r, want);
        free(want);
    }
    free(in);
    cc_free(s);

    /* reduce_scatter_block: n elements per rank out of n * p */
    in = inputs(c, rank, 0, n * p);
    s = dev_of(in, bytes * p);
    want = expect(c, 0, p, (long)rank * n, n);
    CC_CALL(nb, MPI_Reduce_scatter_block(s, r, n, c->type, c->op, comm),
            MPI_Ireduce_scatter_block(s, r, n, c->type, c->op, comm, CC_REQ));
    f += check(c, "reduce_scatter_block", nb, n, r, want);
    /* reduce_scatter, in place: counts n + r % 2, the result at the front */
    int counts[64], first = 0, total = 0;
    for (int q = 0; q < p; q++) {
        counts[q] = n + q % 2;
        first += q < rank ? counts[q] : 0;
        total += counts[q];
    }
    free(in);
    free(want);
    cc_free(s);
    in = inputs(c, rank, 0, total);
    s = dev_of(in, (size_t)total * c->size);
    want = expect(c, 0, p, first, counts[rank]);
    CC_CALL(nb, MPI_Reduce_scatter(MPI_IN_PLACE, s, counts, c->type, c->op, comm),
            MPI_Ireduce_scatter(MPI_IN_PLACE, s, counts, c->type, c->op, comm, CC_REQ));
    f += check(c, "reduce_scatter(in place)", nb, counts[rank], s, want);
    free(in);
    free(want);
    cc_free(s);

    if (!nb) {
        /* reduce_local: this rank's and the next rank's inputs */
        void *a = inputs(c, rank, 0, n), *b = inputs(c, rank + 1, 0, n);
        void *da = dev_of(a, bytes), *db = dev_of(b, bytes);
        want = expect(c, rank, rank + 2, 0, n);
        MPI_Reduce_local(da, db, n, c->type, c->op);
        f += check(c, "reduce_local", 0, n, db, want);
        free(a);
        free(b);
        free(want);
        cc_free(da);
        cc_free(db);
    }
    free(all);
    cc_free(r);
    return f;
}

long cc_run_reduce(MPI_Comm comm, int n)
{
    int nc;
    const red_t *c = cases(&nc);
    long f = 0;
    for (int k = 0; k < nc; k++) {
        for (int nb = 0; nb < 2; nb++) {
            f += one_case(comm, &c[k], n, nb);
        }
    }
    return f;
}
