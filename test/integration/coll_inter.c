/* coll_verify: collectives on an intercommunicator between the two halves
 * of MPI_COMM_WORLD (even and odd ranks): the rooted ones from local rank 0
 * of the even group (MPI_ROOT there, MPI_PROC_NULL for the rest of it), the
 * others between the groups, blocking and nonblocking. A value of rank r of
 * group g says so: source g * 1000 + r (* 100 + destination for alltoall). */
#include "coll_check.h"

#include <stdlib.h>

typedef struct {
    MPI_Comm comm;
    int g, me, np, rp, n, nb;
} ic_t;

static double *host_blocks(int blocks, int n, long (*src)(const ic_t *, int), const ic_t *c)
{
    double *h = malloc(((size_t)blocks * n + 1) * sizeof(double));
    for (int b = 0; b < blocks; b++) {
        for (int i = 0; i < n; i++) {
            h[(size_t)b * n + i] = cc_val(src(c, b), i);
        }
    }
    return h;
}

static long me_src(const ic_t *c, int b) { (void)b; return c->g * 1000 + c->me; }
static long remote_src(const ic_t *c, int b) { return (1 - c->g) * 1000 + b; }
static long a2a_out(const ic_t *c, int b) { return (c->g * 1000 + c->me) * 100 + b; }
static long a2a_in(const ic_t *c, int b) { return ((1 - c->g) * 1000 + b) * 100 + c->me; }
static long root_src(const ic_t *c, int b) { (void)c; (void)b; return 999; }
static long block_src(const ic_t *c, int b) { (void)c; return 500 + b; }
static long my_block(const ic_t *c, int b) { (void)b; return 500 + c->me; }

/* root: 1 at the even group's local rank 0, MPI_PROC_NULL for the rest of
 * the even group; the odd group names that root (0) */
static int root_arg(const ic_t *c)
{
    return c->g == 1 ? 0 : c->me == 0 ? MPI_ROOT : MPI_PROC_NULL;
}

static long check_blocks(const ic_t *c, const char *what, const double *buf, int blocks,
                         long (*src)(const ic_t *, int))
{
    double *want = host_blocks(blocks, c->n, src, c);
    long f = cc_check(what, c->n, buf, want, (size_t)blocks * c->n);
    free(want);
    return f;
}

static long rooted(const ic_t *c)
{
    int n = c->n, root = root_arg(c);
    long f = 0;
    /* bcast from the even group's root */
    double *h = host_blocks(1, n, root_src, c);
    double *b = root == MPI_ROOT ? cc_dup(h, n) : cc_sentinels(n);
    CC_CALL(c->nb, MPI_Bcast(b, n, MPI_DOUBLE, root, c->comm),
            MPI_Ibcast(b, n, MPI_DOUBLE, root, c->comm, CC_REQ));
    if (c->g == 1) {
        f += check_blocks(c, c->nb ? "inter Ibcast" : "inter bcast", b, 1, root_src);
    }
    cc_free(b);
    free(h);
    /* gather of the odd group's blocks at the root */
    h = host_blocks(1, n, me_src, c);
    double *s = cc_dup(h, n), *r = root == MPI_ROOT ? cc_sentinels((size_t)n * c->rp) : NULL;
    CC_CALL(c->nb, MPI_Gather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, root, c->comm),
            MPI_Igather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, root, c->comm, CC_REQ));
    if (root == MPI_ROOT) {
        f += check_blocks(c, c->nb ? "inter Igather" : "inter gather", r, c->rp, remote_src);
        cc_free(r);
    }
    cc_free(s);
    free(h);
    /* scatter of the root's blocks to the odd group */
    h = host_blocks(c->rp, n, block_src, c);
    s = root == MPI_ROOT ? cc_dup(h, (size_t)n * c->rp) : NULL;
    r = cc_sentinels(n);
    CC_CALL(c->nb, MPI_Scatter(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, root, c->comm),
            MPI_Iscatter(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, root, c->comm, CC_REQ));
    if (c->g == 1) {
        f += check_blocks(c, c->nb ? "inter Iscatter" : "inter scatter", r, 1, my_block);
    }
    if (s != NULL) {
        cc_free(s);
    }
    cc_free(r);
    free(h);
    /* reduce (sum) of the odd group's values at the root */
    double *in = malloc((size_t)n * sizeof(double)), *want = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        in[i] = c->g * 1000 + c->me + i;
        want[i] = 0;
        for (int q = 0; q < c->rp; q++) {
            want[i] += (1 - c->g) * 1000 + q + i;
        }
    }
    s = cc_dup(in, n);
    r = root == MPI_ROOT ? cc_sentinels(n) : NULL;
    CC_CALL(c->nb, MPI_Reduce(s, r, n, MPI_DOUBLE, MPI_SUM, root, c->comm),
            MPI_Ireduce(s, r, n, MPI_DOUBLE, MPI_SUM, root, c->comm, CC_REQ));
    if (root == MPI_ROOT) {
        f += cc_check(c->nb ? "inter Ireduce" : "inter reduce", n, r, want, n);
        cc_free(r);
    }
    /* allreduce: each group gets the other group's sum */
    r = cc_sentinels(n);
    CC_CALL(c->nb, MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, c->comm),
            MPI_Iallreduce(s, r, n, MPI_DOUBLE, MPI_SUM, c->comm, CC_REQ));
    f += cc_check(c->nb ? "inter Iallreduce" : "inter allreduce", n, r, want, n);
    cc_free(r);
    cc_free(s);
    free(in);
    free(want);
    return f;
}

static long all_to_all(const ic_t *c)
{
    int n = c->n;
    long f = 0;
    double *h = host_blocks(1, n, me_src, c);
    double *s = cc_dup(h, n), *r = cc_sentinels((size_t)n * c->rp);
    CC_CALL(c->nb, MPI_Allgather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, c->comm),
            MPI_Iallgather(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, c->comm, CC_REQ));
    f += check_blocks(c, c->nb ? "inter Iallgather" : "inter allgather", r, c->rp, remote_src);
    cc_free(s);
    cc_free(r);
    free(h);
    h = host_blocks(c->rp, n, a2a_out, c);
    s = cc_dup(h, (size_t)n * c->rp);
    r = cc_sentinels((size_t)n * c->rp);
    CC_CALL(c->nb, MPI_Alltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, c->comm),
            MPI_Ialltoall(s, n, MPI_DOUBLE, r, n, MPI_DOUBLE, c->comm, CC_REQ));
    f += check_blocks(c, c->nb ? "inter Ialltoall" : "inter alltoall", r, c->rp, a2a_in);
    cc_free(s);
    cc_free(r);
    free(h);
    return f;
}

long cc_run_inter(int n)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        return 0;
    }
    ic_t c = {.g = rank % 2, .n = n};
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, c.g, rank, &half);
    /* leaders: world ranks 0 (even group) and 1 (odd group) */
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - c.g, 77, &c.comm);
    MPI_Comm_rank(c.comm, &c.me);
    MPI_Comm_size(c.comm, &c.np);
    MPI_Comm_remote_size(c.comm, &c.rp);
    long f = 0;
    for (c.nb = 0; c.nb < 2; c.nb++) {
        f += rooted(&c) + all_to_all(&c);
    }
    MPI_Comm_free(&c.comm);
    MPI_Comm_free(&half);
    return f;
}
