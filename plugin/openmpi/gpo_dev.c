/* The companion table of the UCX plugin, looked up once per process. */
#include "gpo_dev.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static const gp_companion_t *dev_table;
static const char *dev_why = "not looked up yet";
static pthread_once_t dev_once = PTHREAD_ONCE_INIT;

static void dev_lookup(void)
{
    gp_companion_get_fn get = (gp_companion_get_fn)dlsym(RTLD_DEFAULT, GP_COMPANION_SYMBOL);
    if (get == NULL) {
        dev_why = "the gdrpipe UCX plugin is not loaded (run under gdrpipe-run)";
        return;
    }
    const gp_companion_t *c = get(GP_COMPANION_VERSION);
    if (c == NULL) {
        dev_why = "the gdrpipe UCX plugin is older than this Open MPI component";
        return;
    }
    if (!c->cuda_available()) {
        dev_why = c->cuda_why_not();
        return;
    }
    dev_why = NULL;
    dev_table = c;
}

const gp_companion_t *gpo_dev(void)
{
    pthread_once(&dev_once, dev_lookup);
    return dev_table;
}

const char *gpo_dev_why_not(void)
{
    pthread_once(&dev_once, dev_lookup);
    return dev_why != NULL ? dev_why : "";
}

int gpo_copy(void *dst, const void *src, size_t len)
{
    char err[256] = "";
    const gp_companion_t *c = gpo_dev();
    if (len == 0) {
        return 0;
    }
    if (c == NULL || c->copy(dst, src, len, err, sizeof(err)) != 0) {
        fprintf(stderr, "gdrpipe (Open MPI): copy of %zu bytes %p -> %p failed: %s\n", len,
                src, dst, c == NULL ? gpo_dev_why_not() : err);
        return -1;
    }
    return 0;
}
