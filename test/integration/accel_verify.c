/* accel_verify: Open MPI 5's (and 6's) accelerator framework as gdrpipe's
 * accelerator/cuda implements it, called the way Open MPI's own code calls
 * it (opal_accelerator.*) after MPI_Init in each rank: the component
 * selected is "cuda"; allocations through it are device memory that
 * check_addr, get_address_range and get_buffer_id describe, and that its
 * release returns; synchronous, "asynchronous" (stream, event) and
 * overlapping copies move the right bytes between host and device; host
 * registration; device, PCI address and peer queries; on Open MPI 6 also
 * the calls its table added (stream sync, event wait, asynchronous move,
 * allocations on a stream, IPC refused, device count, memory kind). Device
 * memory is read
 * back through the driver (devmem.h), never by the CPU. Exit status 0 when
 * every check passed. */
#include "devmem.h"

#include "opal_config.h"

#include "opal/constants.h"
#include "opal/mca/accelerator/accelerator.h"
#include "opal/mca/accelerator/base/base.h"

#include "accel_cuda.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            fprintf(stderr, "accel_verify: " __VA_ARGS__);      \
            fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);  \
            failures++;                                         \
        }                                                       \
    } while (0)

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(i * 31u + seed);
    }
}

int main(int argc, char **argv)
{
    const size_t n = 1 << 20;
    int dev = -1, r;
    uint64_t flags = 0;

    MPI_Init(&argc, &argv);
    if (gp_devmem_init(-1, -1) != 0) {
        fprintf(stderr, "accel_verify: no CUDA driver\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    CHECK(strcmp(opal_accelerator_base_selected_component.base_version.mca_component_name,
                 "cuda") == 0,
          "selected accelerator is %s",
          opal_accelerator_base_selected_component.base_version.mca_component_name);

    unsigned char *want = malloc(n), *got = malloc(n);
    pattern(want, n, 7);

    /* allocation and its description */
    void *d = NULL;
    CHECK(opal_accelerator.mem_alloc(MCA_ACCELERATOR_NO_DEVICE_ID, &d, n) == OPAL_SUCCESS &&
              d != NULL, "mem_alloc");
    r = opal_accelerator.check_addr(d, &dev, &flags);
    CHECK(r > 0 && dev == gp_devmem_device() && flags == 0,
          "check_addr(device) = %d, device %d (want %d), flags %lx", r, dev,
          gp_devmem_device(), (unsigned long)flags);
    r = opal_accelerator.check_addr(want, &dev, &flags);
    CHECK(r == 0 && dev == MCA_ACCELERATOR_NO_DEVICE_ID, "check_addr(host) = %d", r);
    void *base = NULL;
    size_t size = 0;
    CHECK(opal_accelerator.get_address_range(MCA_ACCELERATOR_NO_DEVICE_ID, (char *)d + 100,
                                             &base, &size) == OPAL_SUCCESS &&
              base == d && size >= n, "get_address_range: %p + %zu for %p", base, size, d);
    CHECK(opal_accelerator.get_address_range(MCA_ACCELERATOR_NO_DEVICE_ID, want, &base,
                                             &size) != OPAL_SUCCESS,
          "get_address_range of host memory succeeded");
    opal_accelerator_buffer_id_t id1 = 0, id2 = 0;
    CHECK(opal_accelerator.get_buffer_id(MCA_ACCELERATOR_NO_DEVICE_ID, d, &id1) == OPAL_SUCCESS &&
              id1 != 0, "get_buffer_id");

    /* copies host -> device -> host */
    CHECK(opal_accelerator.mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, MCA_ACCELERATOR_NO_DEVICE_ID,
                                    d, want, n, MCA_ACCELERATOR_TRANSFER_UNSPEC) == OPAL_SUCCESS,
          "mem_copy H->D");
    memset(got, 0, n);
    CHECK(gp_devmem_dtoh(got, d, n) == 0 && memcmp(got, want, n) == 0, "H->D bytes");
    memset(got, 0, n);
    CHECK(opal_accelerator.mem_copy(MCA_ACCELERATOR_NO_DEVICE_ID, MCA_ACCELERATOR_NO_DEVICE_ID,
                                    got, d, n, MCA_ACCELERATOR_TRANSFER_DTOH) == OPAL_SUCCESS &&
              memcmp(got, want, n) == 0, "mem_copy D->H");

    /* overlapping move inside device memory: bytes [0, n/2) to [n/4, 3n/4) */
    CHECK(opal_accelerator.mem_move(MCA_ACCELERATOR_NO_DEVICE_ID, MCA_ACCELERATOR_NO_DEVICE_ID,
                                    (char *)d + n / 4, d, n / 2,
                                    MCA_ACCELERATOR_TRANSFER_DTOD) == OPAL_SUCCESS,
          "mem_move");
    memmove(want + n / 4, want, n / 2);
    CHECK(gp_devmem_dtoh(got, d, n) == 0 && memcmp(got, want, n) == 0, "mem_move bytes");

    /* stream, asynchronous copy, event */
    opal_accelerator_stream_t *stream = NULL;
    opal_accelerator_event_t *event = NULL;
    pattern(want, n, 99);
    CHECK(opal_accelerator.create_stream(MCA_ACCELERATOR_NO_DEVICE_ID, &stream) == OPAL_SUCCESS &&
              GPO_ACCEL_CREATE_EVENT(MCA_ACCELERATOR_NO_DEVICE_ID, &event) == OPAL_SUCCESS,
          "create_stream/create_event");
    if (stream != NULL && event != NULL) {
        CHECK(opal_accelerator.mem_copy_async(MCA_ACCELERATOR_NO_DEVICE_ID,
                                              MCA_ACCELERATOR_NO_DEVICE_ID, d, want, n, stream,
                                              MCA_ACCELERATOR_TRANSFER_HTOD) == OPAL_SUCCESS &&
                  opal_accelerator.record_event(MCA_ACCELERATOR_NO_DEVICE_ID, event, stream) ==
                      OPAL_SUCCESS,
              "mem_copy_async/record_event");
        CHECK(opal_accelerator.query_event(MCA_ACCELERATOR_NO_DEVICE_ID, event) == OPAL_SUCCESS,
              "query_event after the copy");
        CHECK(gp_devmem_dtoh(got, d, n) == 0 && memcmp(got, want, n) == 0,
              "asynchronous copy bytes");
#if GPO_ACCEL_TABLE_6
        CHECK(opal_accelerator.sync_stream(stream) == OPAL_SUCCESS &&
                  opal_accelerator.wait_event(MCA_ACCELERATOR_NO_DEVICE_ID, event, stream) ==
                      OPAL_SUCCESS,
              "sync_stream/wait_event");
        /* overlapping, on the stream: the first half moves up by a quarter */
        CHECK(opal_accelerator.mem_move_async(MCA_ACCELERATOR_NO_DEVICE_ID,
                                              MCA_ACCELERATOR_NO_DEVICE_ID, (char *)d + n / 4, d,
                                              n / 2, stream, MCA_ACCELERATOR_TRANSFER_DTOD) ==
                      OPAL_SUCCESS &&
                  opal_accelerator.sync_stream(stream) == OPAL_SUCCESS,
              "mem_move_async");
        memmove(want + n / 4, want, n / 2);
        CHECK(gp_devmem_dtoh(got, d, n) == 0 && memcmp(got, want, n) == 0,
              "mem_move_async bytes");
        void *ds = NULL;
        CHECK(opal_accelerator.mem_alloc_stream(MCA_ACCELERATOR_NO_DEVICE_ID, &ds, 4096, stream) ==
                      OPAL_SUCCESS &&
                  ds != NULL,
              "mem_alloc_stream");
        if (ds != NULL) {
            int ddev = -1;
            uint64_t dflags = 0;
            CHECK(opal_accelerator.check_addr(ds, &ddev, &dflags) > 0,
                  "mem_alloc_stream gave no device memory");
            CHECK(opal_accelerator.mem_release_stream(MCA_ACCELERATOR_NO_DEVICE_ID, ds, stream) ==
                      OPAL_SUCCESS,
                  "mem_release_stream");
        }
#endif
        OBJ_RELEASE(stream);
        OBJ_RELEASE(event);
    }

    /* a second allocation is another buffer */
    void *d2 = NULL;
    CHECK(opal_accelerator.mem_alloc(gp_devmem_device(), &d2, 4096) == OPAL_SUCCESS &&
              opal_accelerator.get_buffer_id(MCA_ACCELERATOR_NO_DEVICE_ID, d2, &id2) ==
                  OPAL_SUCCESS && id2 != id1, "second buffer id %lu vs %lu",
          (unsigned long)id2, (unsigned long)id1);
    CHECK(opal_accelerator.mem_release(MCA_ACCELERATOR_NO_DEVICE_ID, d2) == OPAL_SUCCESS,
          "mem_release (second)");

    /* release: the pointer is no longer device memory */
    CHECK(opal_accelerator.mem_release(MCA_ACCELERATOR_NO_DEVICE_ID, d) == OPAL_SUCCESS,
          "mem_release");
    r = opal_accelerator.check_addr(d, &dev, &flags);
    CHECK(r <= 0, "check_addr after release = %d", r);
    CHECK(opal_accelerator.mem_release(MCA_ACCELERATOR_NO_DEVICE_ID, NULL) == OPAL_SUCCESS,
          "mem_release(NULL)");

    /* host registration */
    CHECK(opal_accelerator.host_register(MCA_ACCELERATOR_NO_DEVICE_ID, got, n) == OPAL_SUCCESS &&
              opal_accelerator.host_unregister(MCA_ACCELERATOR_NO_DEVICE_ID, got) == OPAL_SUCCESS,
          "host_register/host_unregister");
    CHECK(opal_accelerator.host_unregister(MCA_ACCELERATOR_NO_DEVICE_ID, got) != OPAL_SUCCESS,
          "host_unregister of memory not registered succeeded");

    /* devices */
    int cur = -1, access = -1;
    CHECK(opal_accelerator.get_device(&cur) == OPAL_SUCCESS && cur == gp_devmem_device(),
          "get_device = %d, want %d", cur, gp_devmem_device());
    opal_accelerator_pci_attr_t pci;
    memset(&pci, 0xff, sizeof(pci));
    CHECK(opal_accelerator.get_device_pci_attr(cur, &pci) == OPAL_SUCCESS && pci.domain_id != 0xffff,
          "get_device_pci_attr");
    CHECK(opal_accelerator.get_device_pci_attr(gp_devmem_count(), &pci) != OPAL_SUCCESS,
          "get_device_pci_attr of a device that does not exist succeeded");
    CHECK(opal_accelerator.device_can_access_peer(&access, cur, cur) == OPAL_SUCCESS && access == 1,
          "device_can_access_peer(self) = %d", access);
    CHECK(opal_accelerator.device_can_access_peer(&access, 0, gp_devmem_count()) != OPAL_SUCCESS,
          "device_can_access_peer with a device that does not exist succeeded");
#if GPO_ACCEL_TABLE_6
    int ndev = -1;
    CHECK(opal_accelerator.num_devices(&ndev) == OPAL_SUCCESS && ndev == gp_devmem_count(),
          "num_devices %d, the driver has %d", ndev, gp_devmem_count());
    CHECK(!opal_accelerator.is_ipc_enabled(), "is_ipc_enabled: IPC is not offered");
    ompi_memkind_t kind;
    memset(&kind, 0, sizeof(kind));
    opal_accelerator.get_memkind(&kind);
    CHECK(kind.im_name != NULL && strcmp(kind.im_name, "cuda") == 0 &&
              kind.im_num_restrictors == 3,
          "get_memkind: %s", kind.im_name != NULL ? kind.im_name : "(none)");
    free(kind.im_name);
    for (int i = 0; i < kind.im_num_restrictors; i++) {
        free(kind.im_restrictors[i]);
    }
#endif

    free(want);
    free(got);
    int all = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("accel_verify: %s (%d failed checks)\n", all == 0 ? "passed" : "FAILED", all);
    }
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
