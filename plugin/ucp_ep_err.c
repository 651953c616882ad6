/* Endpoint failures nobody handles: UCP's ucp_ep_create, preloaded like the
 * tag calls (ucp_send.c), gives an endpoint created with a peer's address
 * and without an error handler one that ends the process when one of UCX's
 * TCP connections failed (UCX_GDRPIPE_UNHANDLED_EP_ERROR=exit).
 *
 * Why: Open MPI 4.1's pml ucx creates its endpoints with the peer's address
 * alone. When a connection fails (a link down between hosts: UCX's tcp
 * notices through the kernel's keepalive or retransmission limits), UCP 1.13
 * fails the requests pending on that endpoint, logs at "diag" level that the
 * error will not be handled, and leaves posted receives waiting: a rank
 * waiting for that peer waits forever, and so does the job. Ending the
 * process hands the failure to the launcher, which ends the job, as
 * MPI_ERRORS_ARE_FATAL asks.
 *
 * Only a connection that failed ends the process, not a peer that left:
 * UCX 1.13's tcp reports a peer that closed its connection (a job spawned by
 * MPI_Comm_spawn that finished, a peer that died) with the same status as a
 * connection the kernel gave up on, so the handler asks tcp_bound.c whether
 * one of UCX's TCP sockets failed (the kernel's keepalive or retransmission
 * limits: a link down, a host gone); otherwise it logs at "diag" level, as
 * UCP does, and returns (a peer that died is the launcher's to see).
 * Endpoints the program has closed itself are not concerned: UCP handles
 * their failure without the handler (MPI_Finalize closes every endpoint
 * before the processes leave). Endpoints made from a listener's connection
 * request or to a socket address (client/server programs, whose peers
 * disconnect as they please) and programs that install their own handler
 * are left alone. The endpoints keep their error handling mode
 * (UCP_ERR_HANDLING_MODE_NONE): their lanes stay as UCP chose them. */
#include "gdrpipe.h"

#include <stddef.h>
#include <string.h>
#include <unistd.h>

typedef ucs_status_t (*gdrpipe_ep_create_fn_t)(ucp_worker_h worker,
                                               const ucp_ep_params_t *params,
                                               ucp_ep_h *ep_p);
static gdrpipe_ep_create_fn_t gdrpipe_ep_create_real;

/* GDRPIPE_EP_ERR_*, set when a wire memory domain opens (gdrpipe in use) */
static int gdrpipe_ep_err_action = GDRPIPE_EP_ERR_NONE;
/* endpoints given the handler (the plugin's statistics) */
static uint64_t gdrpipe_ep_err_installed;

const char *gdrpipe_ep_err_names[] = {
    [GDRPIPE_EP_ERR_EXIT] = "exit",
    [GDRPIPE_EP_ERR_NONE] = "none",
    [GDRPIPE_EP_ERR_LAST] = NULL
};

void gdrpipe_ep_err_configure(int action)
{
    gdrpipe_ep_err_action = action;
}

uint64_t gdrpipe_ep_err_count(void)
{
    return __atomic_load_n(&gdrpipe_ep_err_installed, __ATOMIC_RELAXED);
}

static void gdrpipe_ep_err_resolve(void);

static void gdrpipe_ep_err_unhandled(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    if (!gdrpipe_tcp_bound_failed()) {
        ucs_diag("gdrpipe: endpoint %p: error '%s' (no TCP connection failed: a peer that "
                 "closed its connection or ended) not handled", ep,
                 ucs_status_string(status));
        return;
    }
    ucs_error("gdrpipe: endpoint %p failed: %s (a TCP connection failed); the program "
              "installed no error handler for it, so this process ends (exit status 1) "
              "rather than wait for that peer forever (UCX_GDRPIPE_UNHANDLED_EP_ERROR=exit; "
              "'none' leaves it to UCX)", ep, ucs_status_string(status));
    /* no exit handlers: the process may be inside UCX or Open MPI with their
     * locks held; what it shares (memfds, CUDA imports) ends with it */
    _exit(1);
}

/* The end of a field of ucp_ep_params_t */
#define GDRPIPE_EP_PARAM_END(_f) \
    (offsetof(ucp_ep_params_t, _f) + sizeof(((ucp_ep_params_t*)NULL)->_f))

/* How many bytes of the caller's parameters to read: up to the last field
 * its field_mask names (the copy sets err_handler itself).
 * A program built against an older UCX has a shorter struct (UCP reads only
 * the fields the mask names); a mask with bits this UCX does not know comes
 * from newer headers, whose struct is at least as long as ours. */
static size_t gdrpipe_ep_params_used(uint64_t mask)
{
    static const struct {
        uint64_t bit;
        size_t   end;
    } fields[] = {
        {UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, GDRPIPE_EP_PARAM_END(address)},
        {UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE, GDRPIPE_EP_PARAM_END(err_mode)},
        {UCP_EP_PARAM_FIELD_ERR_HANDLER, GDRPIPE_EP_PARAM_END(err_handler)},
        {UCP_EP_PARAM_FIELD_USER_DATA, GDRPIPE_EP_PARAM_END(user_data)},
        {UCP_EP_PARAM_FIELD_SOCK_ADDR, GDRPIPE_EP_PARAM_END(sockaddr)},
        {UCP_EP_PARAM_FIELD_FLAGS, GDRPIPE_EP_PARAM_END(flags)},
        {UCP_EP_PARAM_FIELD_CONN_REQUEST, GDRPIPE_EP_PARAM_END(conn_request)},
        {UCP_EP_PARAM_FIELD_NAME, GDRPIPE_EP_PARAM_END(name)},
        {UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR, GDRPIPE_EP_PARAM_END(local_sockaddr)},
    };
    size_t used = GDRPIPE_EP_PARAM_END(field_mask);
    uint64_t known = 0;

    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); ++i) {
        known |= fields[i].bit;
        if ((mask & fields[i].bit) && (fields[i].end > used)) {
            used = fields[i].end;
        }
    }
    return (mask & ~known) ? sizeof(ucp_ep_params_t) : used;
}

ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params,
                           ucp_ep_h *ep_p)
{
    ucp_ep_params_t with_handler;

    if (gdrpipe_ep_create_real == NULL) { /* called before the constructor ran */
        gdrpipe_ep_err_resolve();
    }
    if ((gdrpipe_ep_err_action != GDRPIPE_EP_ERR_EXIT) || (params == NULL) ||
        ((params->field_mask & (UCP_EP_PARAM_FIELD_ERR_HANDLER |
                                UCP_EP_PARAM_FIELD_REMOTE_ADDRESS)) !=
         UCP_EP_PARAM_FIELD_REMOTE_ADDRESS) ||
        (params->field_mask & (UCP_EP_PARAM_FIELD_CONN_REQUEST |
                               UCP_EP_PARAM_FIELD_SOCK_ADDR))) {
        return gdrpipe_ep_create_real(worker, params, ep_p);
    }
    /* the fields the caller set, the rest zero: never past its struct */
    memset(&with_handler, 0, sizeof(with_handler));
    memcpy(&with_handler, params, gdrpipe_ep_params_used(params->field_mask));
    with_handler.field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
    with_handler.err_handler.cb  = gdrpipe_ep_err_unhandled;
    with_handler.err_handler.arg = NULL;
    __atomic_fetch_add(&gdrpipe_ep_err_installed, 1, __ATOMIC_RELAXED);
    return gdrpipe_ep_create_real(worker, &with_handler, ep_p);
}

static void gdrpipe_ep_err_resolve(void)
{
    gdrpipe_ep_create_real = (gdrpipe_ep_create_fn_t)gdrpipe_preload_next("ucp_ep_create");
}

static void UCS_F_CTOR gdrpipe_ep_err_init(void)
{
    gdrpipe_ep_err_resolve();
}
