/* ep_params: ucp_ep_create through the preloaded plugin (ucp_ep_err.c, which
 * gives an endpoint without an error handler its own) with a parameter
 * struct shorter than this UCX's: a program built against older headers
 * passes field_mask and address only, and UCP reads only the fields the mask
 * names. The struct ends where an inaccessible page begins, so a wrapper that
 * read the whole struct of this UCX would fault. Then an endpoint whose
 * caller gives its own handler (left alone by the wrapper). Both endpoints
 * connect the process's worker to itself. Exit 0 when both were created and
 * closed, 1 otherwise. */
#include "ucpx.h"

#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static void own_handler(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    (void)status;
}

/* close an endpoint (flush) and wait for it; 0, or 1 after saying why */
static int close_ep(gp_ucp_t *u, ucp_ep_h ep)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucs_status_t st = gp_ucp_wait(u, ucp_ep_close_nbx(ep, &param), 0, NULL, 10.0);
    if (st != UCS_OK) {
        fprintf(stderr, "ep_params: closing an endpoint failed: %s\n", ucs_status_string(st));
        return 1;
    }
    return 0;
}

int main(void)
{
    gp_ucp_t u;
    ucp_address_t *addr;
    size_t len;
    int rc = 1;

    if (gp_ucp_open(&u) != 0) {
        return 1;
    }
    if (ucp_worker_get_address(u.worker, &addr, &len) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_worker_get_address failed\n");
        goto out_ucp;
    }

    /* an older program's struct: field_mask and address, then nothing */
    const long page = sysconf(_SC_PAGESIZE);
    char *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((pages == MAP_FAILED) || (mprotect(pages + page, page, PROT_NONE) != 0)) {
        fprintf(stderr, "ep_params: mmap/mprotect failed\n");
        goto out_addr;
    }
    const size_t short_len = offsetof(ucp_ep_params_t, address) + sizeof(ucp_address_t*);
    ucp_ep_params_t *short_params = (ucp_ep_params_t*)(pages + page - short_len);
    short_params->field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    short_params->address = addr;
    ucp_ep_h ep;
    if (ucp_ep_create(u.worker, short_params, &ep) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_ep_create of the short struct failed\n");
        goto out_unmap;
    }
    if (close_ep(&u, ep) != 0) {
        goto out_unmap;
    }

    /* the caller's own handler */
    ucp_ep_params_t own = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                         UCP_EP_PARAM_FIELD_ERR_HANDLER,
                           .address = addr,
                           .err_handler = {.cb = own_handler, .arg = NULL}};
    if (ucp_ep_create(u.worker, &own, &ep) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_ep_create with the caller's handler failed\n");
        goto out_unmap;
    }
    if (close_ep(&u, ep) != 0) {
        goto out_unmap;
    }
    printf("ep_params: both endpoints created and closed\n");
    rc = 0;
out_unmap:
    munmap(pages, 2 * page);
out_addr:
    ucp_worker_release_address(u.worker, addr);
out_ucp:
    gp_ucp_close(&u, 0);
    return rc;
}
