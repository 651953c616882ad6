/* What the blocking (coll_gdrpipe_devmove.c) and the nonblocking and
 * persistent (coll_gdrpipe_idevmove.c) device moves share: a rank's part of
 * a data-moving collective as blocks, the record the ranks exchange about
 * it, and the steps both take on those records. */
#ifndef GDRPIPE_COLL_GDRPIPE_MVPART_H
#define GDRPIPE_COLL_GDRPIPE_MVPART_H

#include "coll_gdrpipe.h"
#include "gdrpipe/companion.h"

#include <stdint.h>

#define MV_MAX GP_REDUCE_MAX_BUFS

enum { MV_SEND = 1, MV_RECV = 2 };

/* what a rank tells the others about its part of one call */
typedef struct gpo_mv_rec {
    int32_t ok;       /* 1: takes part */
    int32_t bufs;     /* MV_SEND, MV_RECV: which ranges it exported */
    uint8_t uuid[16]; /* its GPU (bufs != 0) */
    uint64_t start;   /* the process's start time (gp_dev_import) */
    uint64_t saddr, sspan, raddr, rspan; /* the exported ranges */
    uint64_t soff[MV_MAX], slen[MV_MAX]; /* to rank q: offset in the send range, bytes */
    uint64_t roff[MV_MAX], rlen[MV_MAX]; /* from rank r: offset in the receive range */
    gp_rkey_t skey, rkey;
} gpo_mv_rec_t;

/* this rank's part of a call, as an entry point describes it: block q of
 * the send side is scnt[q] elements of sdt (slen[q] bytes) at sdisp[q]
 * bytes from sbuf, for rank q; the receive side likewise, from rank q */
typedef struct gpo_mv_part {
    const void *sbuf; /* NULL: sends nothing (or in place) */
    void *rbuf;       /* NULL: receives nothing (or in place) */
    ptrdiff_t sdisp[MV_MAX], rdisp[MV_MAX];
    uint64_t slen[MV_MAX], rlen[MV_MAX];
    gpo_count_t scnt[MV_MAX], rcnt[MV_MAX];
    struct ompi_datatype_t *sdt, *rdt;
    int sdense, rdense; /* each side's blocks lie without gaps */
} gpo_mv_part_t;

/* Fills this rank's record: exports the ranges its blocks cover when they
 * are device memory of one GPU that other processes can map and lie
 * without gaps (ok 1), else ok 0. *dev: its GPU (-1: no buffers). */
void gpo_mv_local_part(const gp_companion_t *c, const gpo_mv_part_t *p, int n,
                       gpo_mv_rec_t *rec, int *dev);
/* every rank can take part and every block's sender and receiver agree on
 * its size */
int gpo_mv_all_agree(const gpo_mv_rec_t *all, int n);
/* whether rank me launches: the first rank with buffers on its GPU */
int gpo_mv_first_of_gpu(const gpo_mv_rec_t *all, int me);
/* The launcher's part: imports the ranges and copies the blocks whose
 * destination is on its GPU, and waits for the copies. 0, or -1 with err. */
int gpo_mv_launch(const gp_companion_t *c, const gpo_mv_rec_t *all, int n, int me, int dev,
                  char *err, size_t errlen);

/* how a call runs: blocking (NULL), or starting a request */
typedef struct gpo_mv_how {
    struct ompi_request_t **request;
    int persistent; /* MPI_*_init: the request is started by MPI_Start */
} gpo_mv_how_t;

/* Nonblocking and persistent forms (coll_gdrpipe_idevmove.c): makes the
 * request for part p (copied) and, unless persistent, starts it. 0, or an
 * Open MPI error. */
int gpo_idevmove_start(const gpo_mv_part_t *p, struct ompi_communicator_t *comm,
                       mca_coll_gdrpipe_module_t *m, const gpo_mv_how_t *how);
/* the component closes: no more progress */
void gpo_idevmove_fini(void);

#endif
