/* ep_params: ucp_ep_create through the preloaded plugin (ucp_ep_err.c, which
 * gives an endpoint without an error handler its own) with a parameter
 * struct shorter than this UCX's: a program built against older headers
 * passes field_mask and address only, and UCP reads only the fields the mask
 * names. The struct ends where an inaccessible page begins, so a wrapper that
 * read the whole struct of this UCX would fault. Then an endpoint whose
 * caller gives its own handler (left alone by the wrapper). Both endpoints
 * connect the process's worker to itself. Exit 0 when both were created and
 * closed, 1 otherwise. */
#include <ucp/api/ucp.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void own_handler(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)arg;
    (void)ep;
    (void)status;
}

static int close_ep(ucp_worker_h worker, ucp_ep_h ep)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucs_status_ptr_t req = ucp_ep_close_nbx(ep, &param);
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "ep_params: ucp_ep_close_nbx failed: %s\n",
                ucs_status_string(UCS_PTR_STATUS(req)));
        return 1;
    }
    if (req != NULL) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
    }
    return 0;
}

int main(void)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
    ucp_worker_params_t wparams = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t len;
    int rc = 1;

    if (ucp_init(&params, NULL, &ctx) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_init failed\n");
        return 1;
    }
    if (ucp_worker_create(ctx, &wparams, &worker) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_worker_create failed\n");
        goto out_ctx;
    }
    if (ucp_worker_get_address(worker, &addr, &len) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_worker_get_address failed\n");
        goto out_worker;
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
    if (ucp_ep_create(worker, short_params, &ep) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_ep_create of the short struct failed\n");
        goto out_unmap;
    }
    if (close_ep(worker, ep) != 0) {
        goto out_unmap;
    }

    /* the caller's own handler */
    ucp_ep_params_t own = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                         UCP_EP_PARAM_FIELD_ERR_HANDLER,
                           .address = addr,
                           .err_handler = {.cb = own_handler, .arg = NULL}};
    if (ucp_ep_create(worker, &own, &ep) != UCS_OK) {
        fprintf(stderr, "ep_params: ucp_ep_create with the caller's handler failed\n");
        goto out_unmap;
    }
    if (close_ep(worker, ep) != 0) {
        goto out_unmap;
    }
    printf("ep_params: both endpoints created and closed\n");
    rc = 0;
out_unmap:
    munmap(pages, 2 * page);
out_addr:
    ucp_worker_release_address(worker, addr);
out_worker:
    ucp_worker_destroy(worker);
out_ctx:
    ucp_cleanup(ctx);
    return rc;
}
