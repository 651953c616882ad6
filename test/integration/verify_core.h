/* The data-verification schedule shared by mpi_verify and ucp_verify. The
 * transport is abstracted by vx_comm_t (MPI or UCP); the schedule, buffers,
 * patterns and checks are the same for both. Every received byte is checked,
 * plus guard bytes on both sides of the message. */
#ifndef GDRPIPE_TEST_VERIFY_CORE_H
#define GDRPIPE_TEST_VERIFY_CORE_H

#include "membuf.h"

#include <stddef.h>
#include <stdint.h>

#define VX_WINDOW 64

/* One side's transport. All return 0 on success. Receives must fail (return
 * nonzero) if the received length differs from `len`. `tag` < 2^30. */
typedef struct {
    void *ctx;
    int rank; /* 0 or 1 */
    int pair; /* which pair of ranks (0 with one pair): mixed into the data
               * patterns, so that a message delivered to another pair fails */
    int (*send)(void *ctx, const void *buf, size_t len, uint32_t tag);
    int (*recv)(void *ctx, void *buf, size_t len, uint32_t tag);
    int (*isend)(void *ctx, const void *buf, size_t len, uint32_t tag, void **req);
    int (*irecv)(void *ctx, void *buf, size_t len, uint32_t tag, void **req);
    int (*wait)(void *ctx, void *req); /* completes and releases one request */
    int (*barrier)(void *ctx);
    long (*sum)(void *ctx, long v);     /* sum over both sides */
    /* a transport error: end both sides now (does not return) */
    void (*abort)(void *ctx);
} vx_comm_t;

typedef struct {
    gp_mem_t mem;        /* -d host|cuda: the main placement of both sides */
    int device;          /* -G */
    size_t max;          /* --max */
    size_t window_max;   /* --window-max: largest size of the 64-message phase */
    int realloc_phase;   /* --realloc */
    int alloc_before;    /* --alloc-before (the program decides what "before" is) */
    int inject;          /* --inject-corruption: self-test, must fail */
    int quiet;
} vx_opts_t;

typedef struct {
    vx_opts_t o;
    vx_comm_t *c;
    const char *prog;
    size_t *sizes;
    size_t nsizes;
    size_t cap;                       /* bytes of each pool buffer */
    void *buf[2][2];                  /* [mem type][0 send, 1 recv] */
    void *slot[2][VX_WINDOW];         /* [0 send, 1 recv], main type */
    size_t slot_cap;
    uint64_t msg;                     /* message counter (same on both sides) */
    long checks, fails;               /* this side */
    int allocated;
    double t_phase;                   /* start of the current phase */
    int injected;                     /* --inject-corruption done */
} vx_t;

/* Parse the common options (unknown ones are an error). Returns 0, 1 after
 * --help (exit 0) or -1. extra_usage is printed after the common text. */
int vx_parse(vx_t *v, const char *prog, int argc, char **argv,
             const char *extra_opts, int (*extra)(int opt, const char *arg),
             const char *extra_usage);
/* Build the size list and allocate the pools (host, and cuda if -d cuda;
 * CUDA must be initialised before). Returns 0 or -1. */
int vx_alloc(vx_t *v);
void vx_free(vx_t *v);
/* Run every phase; prints one line per phase and the final line on rank 0.
 * Returns the total number of failures over both sides (0 = all passed),
 * or -1 if the transport failed. */
long vx_run(vx_t *v, vx_comm_t *c);

#endif
