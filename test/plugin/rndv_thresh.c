/* rndv_thresh PPN MAX: two processes (fork, socketpair) open UCP contexts as
 * Open MPI's pml ucx does (TAG, estimated_num_eps 2, estimated_num_ppn PPN),
 * connect one endpoint through the transports of UCX_TLS and read the
 * rendezvous threshold of tag_send from ucp_ep_print_info: the threshold UCP
 * 1.13 applies to every send of device memory (and to non-blocking sends of
 * host memory). Exit 0 when it is at most MAX bytes, 1 otherwise, 2 on
 * errors. The threshold is printed either way. */
#include "ucpx.h"

#include <ucp/api/ucp.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* the size from which "tag_send:" switches to <rndv>; SIZE_MAX if never */
static size_t parse_rndv(const char *info)
{
    const char *line = strstr(info, " tag_send:");
    const char *rndv = line ? strstr(line, "<rndv>") : NULL;
    const char *eol = line ? strchr(line, '\n') : NULL;
    if (rndv == NULL || (eol != NULL && rndv > eol)) {
        return SIZE_MAX;
    }
    /* "..N..<rndv>": walk back over ".." to the number */
    const char *q = rndv;
    while (q > line && q[-1] == '.') {
        --q;
    }
    const char *start = q;
    while (start > line && start[-1] >= '0' && start[-1] <= '9') {
        --start;
    }
    return start < q ? strtoull(start, NULL, 10) : 0;
}

static int run(int fd, int ppn, int printer, size_t *thresh)
{
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_PPN,
        .features = UCP_FEATURE_TAG,
        .estimated_num_eps = 2,
        .estimated_num_ppn = (size_t)ppn,
    };
    ucp_worker_params_t wparams = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                                   .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t len, rlen;
    int rc = 2;

    if (ucp_init(&params, NULL, &ctx) != UCS_OK) {
        return 2;
    }
    if (ucp_worker_create(ctx, &wparams, &worker) != UCS_OK) {
        goto out_ctx;
    }
    if (ucp_worker_get_address(worker, &addr, &len) != UCS_OK) {
        goto out_worker;
    }
    void *remote = NULL;
    if (gp_fd_write(fd, &len, sizeof(len)) || gp_fd_write(fd, addr, len) ||
        gp_fd_read(fd, &rlen, sizeof(rlen)) || (remote = malloc(rlen)) == NULL ||
        gp_fd_read(fd, remote, rlen)) {
        goto out_addr;
    }
    ucp_ep_params_t eparams = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                               .address = remote};
    ucp_ep_h ep;
    if (ucp_ep_create(worker, &eparams, &ep) != UCS_OK) {
        goto out_addr;
    }
    rc = 0;
    if (printer) {
        char *info = NULL;
        size_t info_len = 0;
        FILE *mem = open_memstream(&info, &info_len);
        if (mem == NULL) {
            rc = 2;
        } else {
            ucp_ep_print_info(ep, mem);
            fclose(mem);
            *thresh = parse_rndv(info);
            fputs(info, stderr);
            free(info);
        }
    }
    /* both sides keep their endpoint until both have printed */
    if (gp_fd_barrier(fd) != 0) {
        rc = 2;
    }
    ucp_ep_destroy(ep);
out_addr:
    free(remote);
    ucp_worker_release_address(worker, addr);
out_worker:
    ucp_worker_destroy(worker);
out_ctx:
    ucp_cleanup(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rndv_thresh PPN MAX\n");
        return 2;
    }
    const int ppn = atoi(argv[1]);
    const size_t max = strtoull(argv[2], NULL, 0);
    int sv[2];
    if (ppn < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        return 2;
    }
    pid_t child = gp_fork_alone(5.0);
    if (child < 0) {
        return 2;
    }
    if (child == 0) {
        close(sv[0]);
        size_t unused;
        _exit(run(sv[1], ppn, 0, &unused));
    }
    close(sv[1]);
    size_t thresh = SIZE_MAX;
    int rc = run(sv[0], ppn, 1, &thresh);
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rc = 2;
    }
    if (rc != 0) {
        fprintf(stderr, "rndv_thresh: failed\n");
        return 2;
    }
    printf("ppn %d: tag_send rendezvous from %zu bytes (at most %zu wanted)\n", ppn, thresh, max);
    return thresh <= max ? 0 : 1;
}
