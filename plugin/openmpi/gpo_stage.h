/* Staging of device buffers through host memory around an MPI operation
 * that the CPU carries out: each staged buffer is a byte span relative to
 * the user's pointer, copied device -> host before the operation (IN) and
 * host -> device after it (OUT). Independent of the Open MPI version: the
 * callers compute the spans from their datatypes. */
#ifndef GDRPIPE_OMPI_STAGE_H
#define GDRPIPE_OMPI_STAGE_H

#include <stddef.h>

/* bytes [lo, hi) relative to the buffer pointer; empty when hi <= lo */
typedef struct gpo_span {
    ptrdiff_t lo, hi;
} gpo_span_t;

enum { GPO_IN = 1, GPO_OUT = 2 };

#define GPO_STAGE_MAX 2

typedef struct gpo_stage {
    int n;
    struct {
        char *user;      /* the user's (device) pointer */
        gpo_span_t span;
        char *host;      /* host copy of the span */
        int flags;       /* GPO_IN | GPO_OUT */
    } b[GPO_STAGE_MAX];
} gpo_stage_t;

#define GPO_STAGE_INIT {0}

/* The pointer to use instead of `user` (device memory): a host buffer
 * holding the span, shifted so that the same offsets apply; with GPO_IN the
 * span's contents are copied in. An empty span gives `user` itself (nothing
 * is touched). NULL on failure (message printed, nothing left allocated by
 * this call). */
void *gpo_stage_add(gpo_stage_t *st, void *user, gpo_span_t span, int flags);
/* Copies the GPO_OUT spans back when ok is nonzero, frees the host buffers.
 * 0, or -1 when a copy failed. */
int gpo_stage_end(gpo_stage_t *st, int ok);
/* For operations that run again on the same buffers (persistent requests):
 * the GPO_IN spans copied in anew, the GPO_OUT spans copied back, without
 * freeing anything. 0, or -1 when a copy failed. */
int gpo_stage_copy_in(gpo_stage_t *st);
int gpo_stage_copy_out(gpo_stage_t *st);
/* a heap copy of *st (for operations that complete later), or NULL */
gpo_stage_t *gpo_stage_move(const gpo_stage_t *st);

#endif
