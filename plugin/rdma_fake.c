/* The test-only fake RDMA fabric (one in-process device, port fake0:1), for
 * the test suite on machines without an RDMA NIC. It is chosen before UCX
 * lists any device, from environment variables of the tests' own, not from
 * UCX's configuration (a user has nothing to tune there):
 *   GDRPIPE_TEST_RDMA_FAKE              y: the fake replaces the RDMA devices
 *   GDRPIPE_TEST_RDMA_FAKE_DMABUF       y (default): it accepts dma-buf
 *                                       registrations of device memory; n:
 *                                       device memory goes staged
 *   GDRPIPE_TEST_RDMA_FAKE_FAIL_AFTER   N: the N-th transfer of the process
 *                                       puts its queue pair into the error
 *                                       state (0, default: never)
 *   GDRPIPE_TEST_RDMA_FAKE_LATENCY      of every operation, us (default 1)
 *   GDRPIPE_TEST_RDMA_FAKE_BW           of the fabric, GB/s (0, default:
 *                                       unlimited)
 *   GDRPIPE_TEST_RDMA_FAKE_DEV_BW       of operations touching device memory,
 *                                       GB/s (0, default: FAKE_BW)
 *   GDRPIPE_TEST_RDMA_FAKE_MODELED_CLOCK  y: operations take exactly their
 *                                       modeled time on a clock that moves
 *                                       only when nothing else progresses
 *                                       (calibrations independent of load)
 * Values take UCX's syntax (y/n, numbers). Builds without the fake (release,
 * unless meson -Drdma_fake=enabled) read only GDRPIPE_TEST_RDMA_FAKE, to
 * refuse it with an error. */
#include "rdma.h"

#include <ucs/config/parser.h>
#include <stdlib.h>
#include <string.h>

#define GDRPIPE_RDMA_FAKE_ENV "GDRPIPE_TEST_RDMA_FAKE"

typedef int (*gdrpipe_rdma_fake_parse_t)(const char *buf, void *dest, const void *arg);

/* GDRPIPE_TEST_RDMA_FAKE<suffix> into *dest when set (else *dest stays);
 * 0 and an error naming it when its value is invalid */
static int gdrpipe_rdma_fake_get(const char *suffix, gdrpipe_rdma_fake_parse_t parse,
                                 void *dest)
{
    char name[64];
    const char *value;

    snprintf(name, sizeof(name), "%s%s", GDRPIPE_RDMA_FAKE_ENV, suffix);
    value = getenv(name);
    if (value == NULL) {
        return 1;
    }
    if (parse(value, dest, NULL) != 1) {
        ucs_error("gdrpipe_rdma: invalid %s=%s: the fake RDMA fabric is not used",
                  name, value);
        return 0;
    }
    return 1;
}

#if GDRPIPE_RDMA_FAKE_ALLOWED
static void gdrpipe_rdma_fake_use(void)
{
    gp_rdma_fake_config_t fc;
    int dmabuf = 1, modeled_clock = 0;

    memset(&fc, 0, sizeof(fc));
    fc.latency_us = 1;
    if (!gdrpipe_rdma_fake_get("_DMABUF", ucs_config_sscanf_bool, &dmabuf) ||
        !gdrpipe_rdma_fake_get("_FAIL_AFTER", ucs_config_sscanf_uint, &fc.fail_after) ||
        !gdrpipe_rdma_fake_get("_LATENCY", ucs_config_sscanf_double, &fc.latency_us) ||
        !gdrpipe_rdma_fake_get("_BW", ucs_config_sscanf_double, &fc.bandwidth_gbps) ||
        !gdrpipe_rdma_fake_get("_DEV_BW", ucs_config_sscanf_double,
                               &fc.device_bandwidth_gbps) ||
        !gdrpipe_rdma_fake_get("_MODELED_CLOCK", ucs_config_sscanf_bool, &modeled_clock)) {
        return;
    }
    fc.dmabuf        = dmabuf;
    fc.modeled_clock = modeled_clock;
    if (gp_rdma_use_fake(&fc) != 0) {
        ucs_warn("gdrpipe_rdma: %s set too late: real devices in use", GDRPIPE_RDMA_FAKE_ENV);
    }
}
#endif

void gdrpipe_rdma_fake_apply(void)
{
    int enable = 0;

    if (!gdrpipe_rdma_fake_get("", ucs_config_sscanf_bool, &enable) || !enable) {
        return;
    }
#if GDRPIPE_RDMA_FAKE_ALLOWED
    gdrpipe_rdma_fake_use();
#else
    {
        static int said;
        if (!said) {
            said = 1;
            ucs_error("gdrpipe_rdma: %s is a test setting, left out of this build "
                      "(meson -Drdma_fake=enabled): ignored, real devices only",
                      GDRPIPE_RDMA_FAKE_ENV);
        }
    }
#endif
}
