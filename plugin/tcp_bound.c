/* A bound on how long UCX's TCP connections may stay silent
 * (UCX_GDRPIPE_TCP_TIMEOUT): the sockets that libucs connects and accepts
 * (UCX's tcp transport and its tcp connection manager) get
 *  - TCP_USER_TIMEOUT: the kernel fails a connection whose peer has not
 *    acknowledged the data sent to it for that long (without it: the
 *    retransmission limit, net.ipv4.tcp_retries2, about 15 minutes);
 *  - TCP keepalive on accepted sockets: UCX 1.13 enables it only on the
 *    sockets it connects (uct_tcp_ep_keepalive_enable), so the accepting side
 *    of an idle connection never learns that its peer is gone. The probes
 *    start after a third of the bound; a connected socket keeps UCX's own
 *    keepalive settings (UCX_TCP_KEEPIDLE, ...).
 * Either way the connection fails within about the bound, UCX's tcp reports
 * the endpoint's error to UCP, and ucp_ep_err.c ends a process that has no
 * handler for it. A peer that is alive answers the probes and acknowledges
 * the data (also while its receive window is full, on Linux 5.8 and later),
 * whatever its program is doing.
 *
 * accept() and connect() are preloaded like the UCP calls (gdrpipe-run);
 * only calls made from libucs's code are touched, every other socket of the
 * process is left as it is. */
#include "gdrpipe.h"

#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sock.h>

typedef int (*gdrpipe_accept_fn_t)(int fd, struct sockaddr *addr, socklen_t *len);
typedef int (*gdrpipe_connect_fn_t)(int fd, const struct sockaddr *addr, socklen_t len);
static gdrpipe_accept_fn_t gdrpipe_accept_real;
static gdrpipe_connect_fn_t gdrpipe_connect_real;

/* the bound in milliseconds (0: off), set when a wire memory domain opens */
static unsigned gdrpipe_tcp_timeout_ms;
/* where libucs is loaded (its sockets' calls come from there) */
static const void *gdrpipe_tcp_libucs_base;
/* sockets given the bound (the plugin's statistics) */
static uint64_t gdrpipe_tcp_bounded;

void gdrpipe_tcp_bound_configure(double timeout_s)
{
    Dl_info info;

    if (!(timeout_s > 0) || (timeout_s >= UINT32_MAX / 1000.0)) {
        gdrpipe_tcp_timeout_ms = 0; /* inf, or none */
        return;
    }
    if ((gdrpipe_tcp_libucs_base == NULL) &&
        dladdr((const void*)ucs_socket_accept, &info) && (info.dli_fbase != NULL)) {
        gdrpipe_tcp_libucs_base = info.dli_fbase;
    }
    gdrpipe_tcp_timeout_ms = ucs_max((unsigned)(timeout_s * 1000.0 + 0.5), 1000);
}

uint64_t gdrpipe_tcp_bound_count(void)
{
    return __atomic_load_n(&gdrpipe_tcp_bounded, __ATOMIC_RELAXED);
}

/* whether the call came from libucs's code (caller: a return address) */
static int gdrpipe_tcp_from_ucx(const void *caller)
{
    Dl_info info;

    return (gdrpipe_tcp_timeout_ms != 0) && (gdrpipe_tcp_libucs_base != NULL) &&
           dladdr(caller, &info) && (info.dli_fbase == gdrpipe_tcp_libucs_base);
}

static void gdrpipe_tcp_set(int fd, int level, int name, int value, const char *what)
{
    if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
        ucs_debug("gdrpipe: setsockopt(%d, %s=%d): %m", fd, what, value);
    }
}

/* the bound on one TCP socket; keepalive too where nobody enabled it */
static void gdrpipe_tcp_bound(int fd)
{
    const unsigned ms = gdrpipe_tcp_timeout_ms;
    int domain = 0, type = 0, keepalive = 0;
    socklen_t len = sizeof(int);
    const int saved_errno = errno;

    if ((getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) ||
        ((domain != AF_INET) && (domain != AF_INET6)) ||
        (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) || (type != SOCK_STREAM)) {
        errno = saved_errno;
        return;
    }
    gdrpipe_tcp_set(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)ms, "TCP_USER_TIMEOUT");
    if ((getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &keepalive, &len) == 0) && !keepalive) {
        /* probes from a third of the bound, then every sixth of it: with the
         * user timeout set, the kernel drops the connection at the first
         * probe after the bound without an answer */
        gdrpipe_tcp_set(fd, IPPROTO_TCP, TCP_KEEPIDLE, (int)ucs_max(ms / 3000, 1),
                        "TCP_KEEPIDLE");
        gdrpipe_tcp_set(fd, IPPROTO_TCP, TCP_KEEPINTVL, (int)ucs_max(ms / 6000, 1),
                        "TCP_KEEPINTVL");
        gdrpipe_tcp_set(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    }
    __atomic_fetch_add(&gdrpipe_tcp_bounded, 1, __ATOMIC_RELAXED);
    errno = saved_errno;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    const int new_fd = gdrpipe_accept_real(fd, addr, len);

    if ((new_fd >= 0) && gdrpipe_tcp_from_ucx(__builtin_return_address(0))) {
        gdrpipe_tcp_bound(new_fd);
    }
    return new_fd;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    /* before the connection starts: also covers its establishment */
    if (gdrpipe_tcp_from_ucx(__builtin_return_address(0))) {
        gdrpipe_tcp_bound(fd);
    }
    return gdrpipe_connect_real(fd, addr, len);
}

static void *gdrpipe_tcp_next(const char *name)
{
    void *fn = dlsym(RTLD_NEXT, name);

    if (fn == NULL) {
        ucs_fatal("gdrpipe: %s not found after the plugin: %s", name, dlerror());
    }
    return fn;
}

static void UCS_F_CTOR gdrpipe_tcp_bound_init(void)
{
    gdrpipe_accept_real  = (gdrpipe_accept_fn_t)gdrpipe_tcp_next("accept");
    gdrpipe_connect_real = (gdrpipe_connect_fn_t)gdrpipe_tcp_next("connect");
}
