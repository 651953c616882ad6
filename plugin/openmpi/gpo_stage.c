/* Host staging of byte spans of device buffers. */
#include "gpo_stage.h"

#include "gpo_dev.h"
#include "gpo_hostbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *gpo_stage_add(gpo_stage_t *st, void *user, gpo_span_t span, int flags)
{
    if (span.hi <= span.lo) {
        return user;
    }
    if (st->n == GPO_STAGE_MAX) {
        fprintf(stderr, "gdrpipe (Open MPI): more than %d staged buffers\n", GPO_STAGE_MAX);
        return NULL;
    }
    size_t len = (size_t)(span.hi - span.lo);
    void *host = gpo_hostbuf_get(len);
    if (host == NULL) {
        fprintf(stderr, "gdrpipe (Open MPI): no host memory to stage %zu bytes\n", len);
        return NULL;
    }
    char *dev = (char *)user + span.lo;
    if ((flags & GPO_IN) && gpo_copy(host, dev, len) != 0) {
        gpo_hostbuf_put(host);
        return NULL;
    }
    st->b[st->n].user = user;
    st->b[st->n].span = span;
    st->b[st->n].host = host;
    st->b[st->n].flags = flags;
    st->n++;
    return (char *)host - span.lo;
}

static size_t span_len(const gpo_stage_t *st, int i)
{
    return (size_t)(st->b[i].span.hi - st->b[i].span.lo);
}

int gpo_stage_copy_in(gpo_stage_t *st)
{
    for (int i = 0; i < st->n; i++) {
        if ((st->b[i].flags & GPO_IN) &&
            gpo_copy(st->b[i].host, st->b[i].user + st->b[i].span.lo, span_len(st, i)) != 0) {
            return -1;
        }
    }
    return 0;
}

int gpo_stage_copy_out(gpo_stage_t *st)
{
    int rc = 0;
    for (int i = 0; i < st->n; i++) {
        if ((st->b[i].flags & GPO_OUT) &&
            gpo_copy(st->b[i].user + st->b[i].span.lo, st->b[i].host, span_len(st, i)) != 0) {
            rc = -1;
        }
    }
    return rc;
}

int gpo_stage_end(gpo_stage_t *st, int ok)
{
    int rc = ok ? gpo_stage_copy_out(st) : 0;
    for (int i = 0; i < st->n; i++) {
        gpo_hostbuf_put(st->b[i].host);
    }
    st->n = 0;
    return rc;
}

gpo_stage_t *gpo_stage_move(const gpo_stage_t *st)
{
    gpo_stage_t *h = malloc(sizeof(*h));
    if (h != NULL) {
        memcpy(h, st, sizeof(*h));
    }
    return h;
}
