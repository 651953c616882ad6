/* See ucpx.h. */
#include "ucpx.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double gp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int gp_fd_write(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int gp_fd_read(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int gp_fd_barrier(int fd)
{
    return gp_fd_barrier_progress(fd, NULL, 0);
}

int gp_fd_exchange_progress(int fd, gp_ucp_t *u, int n, const void *out, void *in,
                            size_t len)
{
    if (gp_fd_write(fd, out, len) != 0) {
        return -1;
    }
    int open = 0;
    for (int k = 0; k < n; ++k) {
        open += u[k].worker != NULL;
    }
    /* no worker to progress: the read below just blocks */
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    while (open > 0 && poll(&pfd, 1, 0) == 0) {
        for (int k = 0; k < n; ++k) {
            if (u[k].worker != NULL) {
                ucp_worker_progress(u[k].worker);
            }
        }
    }
    return gp_fd_read(fd, in, len);
}

int gp_fd_barrier_progress(int fd, gp_ucp_t *u, int n)
{
    char c = 'b', d = 0;
    return gp_fd_exchange_progress(fd, u, n, &c, &d, 1);
}

int gp_tcp_listen_accept(int port)
{
    int one = 1;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) {
        perror("socket");
        return -1;
    }
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 1) != 0) {
        perror("bind/listen");
        close(ls);
        return -1;
    }
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) {
        perror("accept");
    }
    close(ls);
    return fd;
}

int gp_tcp_connect(const char *host, int port, double timeout_s)
{
    char portstr[16];
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    snprintf(portstr, sizeof(portstr), "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "getaddrinfo %s: %s\n", host, gai_strerror(rc));
        return -1;
    }
    double end = gp_now() + timeout_s;
    int fd = -1;
    do { /* the server may not be listening yet */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
            break;
        }
        if (fd >= 0) {
            close(fd);
            fd = -1;
        }
        usleep(100000);
    } while (gp_now() < end);
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "cannot connect to %s:%d\n", host, port);
    }
    return fd;
}

int gp_ucp_open(gp_ucp_t *u) { return gp_ucp_open_cfg(u, NULL); }

int gp_ucp_open_cfg(gp_ucp_t *u, const char *const *mods)
{
    memset(u, 0, sizeof(*u));
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features = UCP_FEATURE_TAG};
    ucp_config_t *config = NULL;
    ucs_status_t st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_config_read: %s\n", ucs_status_string(st));
        return -1;
    }
    for (; mods != NULL && mods[0] != NULL; mods += 2) {
        st = ucp_config_modify(config, mods[0], mods[1]);
        if (st != UCS_OK) {
            fprintf(stderr, "ucp_config_modify %s=%s: %s\n", mods[0], mods[1],
                    ucs_status_string(st));
            ucp_config_release(config);
            return -1;
        }
    }
    st = ucp_init(&params, config, &u->ctx);
    ucp_config_release(config);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_init: %s\n", ucs_status_string(st));
        return -1;
    }
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    st = ucp_worker_create(u->ctx, &wp, &u->worker);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_worker_create: %s\n", ucs_status_string(st));
        ucp_cleanup(u->ctx);
        u->ctx = NULL;
        return -1;
    }
    return 0;
}

static void gp_ucp_ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    gp_ucp_t *u = arg;
    (void)ep;
    u->ep_status = status;
    u->ep_failed = 1;
}

int gp_ucp_connect(gp_ucp_t *u, int fd, int err_peer)
{
    ucp_address_t *addr = NULL;
    size_t addr_len = 0;
    ucs_status_t st = ucp_worker_get_address(u->worker, &addr, &addr_len);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_worker_get_address: %s\n", ucs_status_string(st));
        return -1;
    }
    uint64_t len64 = addr_len, peer_len = 0;
    int rc = gp_fd_write(fd, &len64, sizeof(len64)) | gp_fd_write(fd, addr, addr_len);
    ucp_worker_release_address(u->worker, addr);
    if (rc != 0 || gp_fd_read(fd, &peer_len, sizeof(peer_len)) != 0 ||
        peer_len > (1u << 20)) {
        fprintf(stderr, "worker address exchange failed\n");
        return -1;
    }
    void *peer = malloc(peer_len);
    if (peer == NULL || gp_fd_read(fd, peer, peer_len) != 0) {
        fprintf(stderr, "worker address exchange failed\n");
        free(peer);
        return -1;
    }
    ucp_ep_params_t ep_params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = peer,
        .err_mode = err_peer ? UCP_ERR_HANDLING_MODE_PEER
                             : UCP_ERR_HANDLING_MODE_NONE};
    if (err_peer) {
        ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep_params.err_handler.cb = gp_ucp_ep_err_cb;
        ep_params.err_handler.arg = u;
    }
    st = ucp_ep_create(u->worker, &ep_params, &u->ep);
    free(peer);
    if (st != UCS_OK) {
        fprintf(stderr, "ucp_ep_create: %s\n", ucs_status_string(st));
        return -1;
    }
    return 0;
}

void gp_ucp_close(gp_ucp_t *u, int force)
{
    if (u->ep != NULL) {
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        ucs_status_ptr_t req = ucp_ep_close_nbx(u->ep, &p);
        if (UCS_PTR_IS_PTR(req)) {
            double end = gp_now() + 10.0;
            while (ucp_request_check_status(req) == UCS_INPROGRESS &&
                   gp_now() < end) {
                ucp_worker_progress(u->worker);
            }
            ucp_request_free(req);
        }
        u->ep = NULL;
    }
    if (u->worker != NULL) {
        ucp_worker_destroy(u->worker);
        u->worker = NULL;
    }
    if (u->ctx != NULL) {
        ucp_cleanup(u->ctx);
        u->ctx = NULL;
    }
}

ucs_status_ptr_t gp_ucp_isend(gp_ucp_t *u, const void *buf, size_t len,
                              ucp_tag_t tag)
{
    ucp_request_param_t p = {.op_attr_mask = 0};
    return ucp_tag_send_nbx(u->ep, buf, len, tag, &p);
}

ucs_status_ptr_t gp_ucp_irecv(gp_ucp_t *u, void *buf, size_t len, ucp_tag_t tag,
                              size_t *recv_len)
{
    /* UCP 1.13 does not fill recv_info on immediate completion, so always
     * ask for a request: gp_ucp_wait reads the length from it */
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};
    (void)recv_len;
    return ucp_tag_recv_nbx(u->worker, buf, len, tag, (ucp_tag_t)-1, &p);
}

ucs_status_t gp_ucp_wait(gp_ucp_t *u, ucs_status_ptr_t req, int is_recv,
                         size_t *recv_len, double timeout_s)
{
    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    const double end = timeout_s > 0 ? gp_now() + timeout_s : 0;
    unsigned spins = 0;
    ucs_status_t st;
    ucp_tag_recv_info_t info = {0};
    for (;;) {
        st = is_recv ? ucp_tag_recv_request_test(req, &info)
                     : ucp_request_check_status(req);
        if (st != UCS_INPROGRESS) {
            break;
        }
        if (ucp_worker_progress(u->worker) == 0 && u->yield_idle) {
            sched_yield();
        }
        if (end > 0 && (++spins & 1023) == 0 && gp_now() > end) {
            return UCS_ERR_TIMED_OUT;
        }
    }
    if (is_recv && recv_len != NULL) {
        *recv_len = info.length;
    }
    ucp_request_free(req);
    return st;
}

void gp_ucp_cancel(gp_ucp_t *u, ucs_status_ptr_t req)
{
    if (!UCS_PTR_IS_PTR(req)) {
        return;
    }
    ucp_request_cancel(u->worker, req);
    for (int i = 0; i < 1000 && ucp_request_check_status(req) == UCS_INPROGRESS;
         ++i) {
        ucp_worker_progress(u->worker);
    }
    ucp_request_free(req);
}

ucs_status_t gp_ucp_send(gp_ucp_t *u, const void *buf, size_t len,
                         ucp_tag_t tag, double timeout_s)
{
    ucs_status_ptr_t r = gp_ucp_isend(u, buf, len, tag);
    ucs_status_t st = gp_ucp_wait(u, r, 0, NULL, timeout_s);
    if (st == UCS_ERR_TIMED_OUT) {
        gp_ucp_cancel(u, r);
    }
    return st;
}

ucs_status_t gp_ucp_recv(gp_ucp_t *u, void *buf, size_t len, ucp_tag_t tag,
                         size_t *recv_len, double timeout_s)
{
    ucs_status_ptr_t r = gp_ucp_irecv(u, buf, len, tag, recv_len);
    ucs_status_t st = gp_ucp_wait(u, r, 1, recv_len, timeout_s);
    if (st == UCS_ERR_TIMED_OUT) {
        gp_ucp_cancel(u, r);
    }
    return st;
}

/* threads of this process: the entries of /proc/self/task; -1 if unknown */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL) {
        return -1;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

pid_t gp_fork_alone(double max_wait_s)
{
    const double until = gp_now() + max_wait_s;
    while (thread_count() > 1 && gp_now() < until) {
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return fork();
}
