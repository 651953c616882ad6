/* A bound on how long UCX's TCP connections may wait for a silent peer
 * (UCX_GDRPIPE_TCP_TIMEOUT, T): the sockets that libucs connects and accepts
 * (UCX's tcp transport and its tcp connection manager) are watched so that a
 * connection to a peer that stopped answering fails within about T:
 *  - idle: TCP keepalive. UCX 1.13 enables it only on the sockets it
 *    connects (uct_tcp_ep_keepalive_enable); accepted sockets get it here,
 *    probes from T/3 on, every T/9, 6 of them. A connected socket keeps
 *    UCX's own settings (10 s + 9 x 2 s by default).
 *  - data sent and not acknowledged: while the kernel retransmits (its
 *    retransmission timer fired: no acknowledgement within the RTO), the
 *    socket gets TCP_USER_TIMEOUT = T, so the kernel fails it T after the
 *    first retransmission instead of after net.ipv4.tcp_retries2 (about 15
 *    minutes); once acknowledgements come again it is cleared.
 *  - a full receive window: a peer that is alive but does not read (a rank
 *    computing without calling MPI) answers the kernel's window probes and
 *    is left alone however long it takes. TCP_USER_TIMEOUT is never left set
 *    then (on Linux 5.11 and later it would fail such a connection T after
 *    the first probe, answered or not). Probes unanswered for T in a row
 *    (the peer gone while its window was full) fail the connection.
 * A thread started with the first such socket samples TCP_INFO of each a
 * few times per T. The failed connection reaches UCP as the endpoint's
 * error, and ucp_ep_err.c ends a process that has no handler for it (it
 * asks gdrpipe_tcp_bound_failed() whether a connection failed so).
 *
 * accept() and connect() are preloaded like the UCP calls (gdrpipe-run);
 * only calls made from libucs's code are touched, every other socket of the
 * process is left as it is. */
#include "gdrpipe.h"

#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sock.h>

typedef int (*gdrpipe_accept_fn_t)(int fd, struct sockaddr *addr, socklen_t *len);
typedef int (*gdrpipe_connect_fn_t)(int fd, const struct sockaddr *addr, socklen_t len);
static gdrpipe_accept_fn_t gdrpipe_accept_real;
static gdrpipe_connect_fn_t gdrpipe_connect_real;

#define GDRPIPE_TCP_MAX_WATCHED 1024

/* one watched socket: the fd and its inode (a closed fd's number reused by
 * another file is told apart and dropped) */
typedef struct {
    int      fd;
    ino_t    ino;
    int      user_timeout_set; /* TCP_USER_TIMEOUT set by the monitor */
    uint64_t probing_since_ms; /* window probes unanswered since (0: not) */
} gdrpipe_tcp_watched_t;

static pthread_mutex_t gdrpipe_tcp_lock = PTHREAD_MUTEX_INITIALIZER;
static gdrpipe_tcp_watched_t gdrpipe_tcp_watched[GDRPIPE_TCP_MAX_WATCHED];
static unsigned gdrpipe_tcp_nwatched;
static int gdrpipe_tcp_monitor_started;

/* the bound in milliseconds (0: off), set when a wire memory domain opens */
static unsigned gdrpipe_tcp_timeout_ms;
/* where libucs is loaded (its sockets' calls come from there) */
static const void *gdrpipe_tcp_libucs_base;
/* sockets watched (statistics) */
static uint64_t gdrpipe_tcp_bounded;

void gdrpipe_tcp_bound_configure(double timeout_s)
{
    Dl_info info;

    if (!(timeout_s > 0) || (timeout_s >= 86400.0)) {
        gdrpipe_tcp_timeout_ms = 0; /* inf (or more than a day: keepalive's limits) */
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

static uint64_t gdrpipe_tcp_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void gdrpipe_tcp_set(int fd, int level, int name, int value, const char *what)
{
    if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
        ucs_debug("gdrpipe: setsockopt(%d, %s=%d): %m", fd, what, value);
    }
}

/* TCP_INFO of watched entry w, if it still names the socket it was made
 * for (0: it does not, or the socket cannot tell) */
static int gdrpipe_tcp_info(const gdrpipe_tcp_watched_t *w, struct tcp_info *ti)
{
    socklen_t len = sizeof(*ti);
    struct stat st;

    return (fstat(w->fd, &st) == 0) && S_ISSOCK(st.st_mode) && (st.st_ino == w->ino) &&
           (getsockopt(w->fd, IPPROTO_TCP, TCP_INFO, ti, &len) == 0);
}

/* One sample of one watched socket (under the lock); 0: drop it */
static int gdrpipe_tcp_sample(gdrpipe_tcp_watched_t *w, uint64_t now)
{
    const unsigned ms = gdrpipe_tcp_timeout_ms;
    struct tcp_info ti;

    if (!gdrpipe_tcp_info(w, &ti)) {
        return 0;
    }
    if (ti.tcpi_state == TCP_CLOSE) {
        return 1; /* failed (kept: gdrpipe_tcp_bound_failed asks) */
    }
    if (ti.tcpi_retransmits > 0) {
        /* retransmitting: fail T after the first retransmission */
        if (!w->user_timeout_set) {
            gdrpipe_tcp_set(w->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, (int)ms, "TCP_USER_TIMEOUT");
            w->user_timeout_set = 1;
        }
        w->probing_since_ms = 0;
        return 1;
    }
    if (w->user_timeout_set) {
        /* acknowledged again; and never while the peer's window is full */
        gdrpipe_tcp_set(w->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, 0, "TCP_USER_TIMEOUT");
        w->user_timeout_set = 0;
    }
    if (ti.tcpi_probes == 0) {
        w->probing_since_ms = 0; /* a live peer answers each probe */
    } else if (w->probing_since_ms == 0) {
        w->probing_since_ms = now;
    } else if (now - w->probing_since_ms >= ms) {
        ucs_diag("gdrpipe: TCP fd %d: window probes unanswered for %u ms, failing the "
                 "connection (UCX_GDRPIPE_TCP_TIMEOUT)", w->fd, ms);
        gdrpipe_tcp_set(w->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, 1, "TCP_USER_TIMEOUT");
        w->user_timeout_set  = 1;
        w->probing_since_ms  = 0;
    }
    return 1;
}

static void *gdrpipe_tcp_monitor(void *arg)
{
    unsigned i;
    uint64_t now;
    struct timespec period;
    const unsigned p_ms = ucs_min(ucs_max(gdrpipe_tcp_timeout_ms / 10, 100), 1000);

    period.tv_sec  = p_ms / 1000;
    period.tv_nsec = (long)(p_ms % 1000) * 1000000;
    for (;;) {
        nanosleep(&period, NULL);
        now = gdrpipe_tcp_now_ms();
        pthread_mutex_lock(&gdrpipe_tcp_lock);
        for (i = 0; i < gdrpipe_tcp_nwatched;) {
            if (gdrpipe_tcp_sample(&gdrpipe_tcp_watched[i], now)) {
                ++i;
            } else {
                gdrpipe_tcp_watched[i] = gdrpipe_tcp_watched[--gdrpipe_tcp_nwatched];
            }
        }
        pthread_mutex_unlock(&gdrpipe_tcp_lock);
    }
    return NULL;
}

int gdrpipe_tcp_bound_failed(void)
{
    struct tcp_info ti;
    unsigned i;
    int failed = 0;

    pthread_mutex_lock(&gdrpipe_tcp_lock);
    for (i = 0; (i < gdrpipe_tcp_nwatched) && !failed; ++i) {
        failed = gdrpipe_tcp_info(&gdrpipe_tcp_watched[i], &ti) &&
                 (ti.tcpi_state == TCP_CLOSE);
    }
    pthread_mutex_unlock(&gdrpipe_tcp_lock);
    return failed;
}

/* whether the call came from libucs's code (caller: a return address) */
static int gdrpipe_tcp_from_ucx(const void *caller)
{
    Dl_info info;

    return (gdrpipe_tcp_timeout_ms != 0) && (gdrpipe_tcp_libucs_base != NULL) &&
           dladdr(caller, &info) && (info.dli_fbase == gdrpipe_tcp_libucs_base);
}

static void gdrpipe_tcp_child_after_fork(void)
{
    /* the monitor thread is not in the child: a new one with its first socket */
    gdrpipe_tcp_nwatched        = 0;
    gdrpipe_tcp_monitor_started = 0;
    pthread_mutex_init(&gdrpipe_tcp_lock, NULL);
}

/* watches a TCP socket of UCX's; keepalive where nobody enabled it */
static void gdrpipe_tcp_watch(int fd)
{
    const unsigned ms = gdrpipe_tcp_timeout_ms;
    int domain = 0, type = 0, keepalive = 0;
    socklen_t len = sizeof(int);
    const int saved_errno = errno;
    pthread_t thread;
    pthread_attr_t attr;
    struct stat st;

    if ((getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) ||
        ((domain != AF_INET) && (domain != AF_INET6)) ||
        (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) || (type != SOCK_STREAM) ||
        (fstat(fd, &st) != 0)) {
        errno = saved_errno;
        return;
    }
    if ((getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &keepalive, &len) == 0) && !keepalive) {
        gdrpipe_tcp_set(fd, IPPROTO_TCP, TCP_KEEPIDLE, (int)ucs_max(ms / 3000, 1),
                        "TCP_KEEPIDLE");
        gdrpipe_tcp_set(fd, IPPROTO_TCP, TCP_KEEPINTVL, (int)ucs_max(ms / 9000, 1),
                        "TCP_KEEPINTVL");
        gdrpipe_tcp_set(fd, IPPROTO_TCP, TCP_KEEPCNT, 6, "TCP_KEEPCNT");
        gdrpipe_tcp_set(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    }
    pthread_mutex_lock(&gdrpipe_tcp_lock);
    if (gdrpipe_tcp_nwatched < GDRPIPE_TCP_MAX_WATCHED) {
        gdrpipe_tcp_watched[gdrpipe_tcp_nwatched].fd               = fd;
        gdrpipe_tcp_watched[gdrpipe_tcp_nwatched].ino              = st.st_ino;
        gdrpipe_tcp_watched[gdrpipe_tcp_nwatched].user_timeout_set = 0;
        gdrpipe_tcp_watched[gdrpipe_tcp_nwatched].probing_since_ms = 0;
        ++gdrpipe_tcp_nwatched;
        __atomic_fetch_add(&gdrpipe_tcp_bounded, 1, __ATOMIC_RELAXED);
    } else {
        ucs_debug("gdrpipe: more than %d TCP sockets: fd %d is not watched",
                  GDRPIPE_TCP_MAX_WATCHED, fd);
    }
    if (!gdrpipe_tcp_monitor_started) {
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&thread, &attr, gdrpipe_tcp_monitor, NULL) == 0) {
            gdrpipe_tcp_monitor_started = 1;
        } else {
            ucs_warn("gdrpipe: cannot start the TCP monitor: UCX_GDRPIPE_TCP_TIMEOUT "
                     "holds for idle connections only");
        }
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&gdrpipe_tcp_lock);
    errno = saved_errno;
}

int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    int new_fd;

    if (gdrpipe_accept_real == NULL) { /* called before the constructor ran */
        gdrpipe_accept_real = (gdrpipe_accept_fn_t)gdrpipe_preload_next("accept");
    }
    new_fd = gdrpipe_accept_real(fd, addr, len);

    if ((new_fd >= 0) && gdrpipe_tcp_from_ucx(__builtin_return_address(0))) {
        gdrpipe_tcp_watch(new_fd);
    }
    return new_fd;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    if (gdrpipe_connect_real == NULL) { /* called before the constructor ran */
        gdrpipe_connect_real = (gdrpipe_connect_fn_t)gdrpipe_preload_next("connect");
    }
    if (gdrpipe_tcp_from_ucx(__builtin_return_address(0))) {
        gdrpipe_tcp_watch(fd);
    }
    return gdrpipe_connect_real(fd, addr, len);
}

static void UCS_F_CTOR gdrpipe_tcp_bound_init(void)
{
    gdrpipe_accept_real  = (gdrpipe_accept_fn_t)gdrpipe_preload_next("accept");
    gdrpipe_connect_real = (gdrpipe_connect_fn_t)gdrpipe_preload_next("connect");
    pthread_atfork(NULL, NULL, gdrpipe_tcp_child_after_fork);
}
