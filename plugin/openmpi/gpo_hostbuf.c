/* The staging buffer cache (gpo_hostbuf.h). */
#include "gpo_hostbuf.h"

#include "gpo_dev.h"

#include <pthread.h>
#include <stdlib.h>

#define SLOTS 8
#define MIN_PINNED ((size_t)64 << 10)

typedef struct {
    void *p;
    size_t len;
    int busy;
} slot_t;

static slot_t slots[SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static size_t round_up(size_t len)
{
    size_t n = MIN_PINNED;
    while (n < len && n < ((size_t)1 << 62)) {
        n <<= 1;
    }
    return n;
}

static void *pinned_alloc(size_t len)
{
    const gp_companion_t *c = gpo_dev();
    char err[128];
    return c != NULL ? c->host_alloc(len, err, sizeof(err)) : NULL;
}

void *gpo_hostbuf_get(size_t len)
{
    void *p = NULL;
    int best = -1, empty = -1, small = -1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].busy) continue;
        if (slots[i].p == NULL) {
            if (empty < 0) empty = i;
        } else if (slots[i].len >= len) {
            if (best < 0 || slots[i].len < slots[best].len) best = i;
        } else if (small < 0) {
            small = i;
        }
    }
    if (best < 0 && (empty >= 0 || small >= 0)) {
        /* a new pinned buffer, in place of a free one too small if need be */
        best = empty >= 0 ? empty : small;
        const gp_companion_t *c = gpo_dev();
        if (slots[best].p != NULL && c != NULL) {
            c->host_free(slots[best].p);
        }
        slots[best].len = round_up(len);
        slots[best].p = pinned_alloc(slots[best].len);
        if (slots[best].p == NULL) {
            slots[best].len = 0;
            best = -1;
        }
    }
    if (best >= 0) {
        slots[best].busy = 1;
        p = slots[best].p;
    }
    pthread_mutex_unlock(&mu);
    if (p == NULL && posix_memalign(&p, 64, len ? len : 1) != 0) {
        p = NULL;
    }
    return p;
}

void gpo_hostbuf_put(void *buf)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].p == buf && slots[i].busy) {
            slots[i].busy = 0;
            pthread_mutex_unlock(&mu);
            return;
        }
    }
    pthread_mutex_unlock(&mu);
    free(buf);
}
