// The CUDA side of GPUDirect RDMA (src/cuda/gpudirect.cc) against the
// simulator. Also meant for a real GPU (no NIC needed): point
// UCX_GDRPIPE_CUDA_LIB at the real libcuda.so.1 and run "[gpudirect]"; the
// simulator-only checks (mapping the fd, the flush counter) are skipped there.
#include "gdrpipe/cuda/gpudirect.hpp"

#include "sim_fixture.hpp"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

using namespace gdrpipe::cuda;
using namespace gdrpipe::cuda::test;

TEST_CASE("gpudirect: dma-buf fds of device memory, refusals", "[cuda][sim][gpudirect]") {
    GP_REQUIRE_SIM();
    auto flushes = reinterpret_cast<unsigned long (*)(void)>(
        dlsym(driver().handle(), "gdrpipe_sim_rdma_flushes"));
    const bool sim = flushes != nullptr;
    REQUIRE(dmabuf_supported(0)); // the simulator says so; on a GPU: informative
    DevBuf buf(0, 4 << 20);
    std::vector<unsigned char> pat(4096);
    for (std::size_t i = 0; i < pat.size(); ++i) pat[i] = static_cast<unsigned char>(i * 5 + 1);
    {
        ScopedContext scope(0);
        REQUIRE(driver().api().cuMemcpyHtoD(buf.ptr + (128 << 10), pat.data(), pat.size()) ==
                CUDA_SUCCESS);
    }
    int fd = -1;
    // a 64 KiB aligned start inside the allocation, length not page aligned
    REQUIRE(dmabuf_fd(static_cast<char *>(buf.p()) + (128 << 10), 100000, &fd) == CUDA_SUCCESS);
    REQUIRE(fd >= 0);
    if (sim) {
        // the simulator's fd starts at the range: its first page is the pattern
        void *m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, lseek(fd, 0, SEEK_CUR));
        REQUIRE(m != MAP_FAILED);
        CHECK(std::memcmp(m, pat.data(), pat.size()) == 0);
        munmap(m, 4096);
    }
    close(fd);
    // refused: a start that is not 64 KiB aligned, host memory, empty
    CHECK(dmabuf_fd(static_cast<char *>(buf.p()) + 4096, 4096, &fd) == CUDA_ERROR_INVALID_VALUE);
    std::vector<char> host(1 << 16);
    CHECK(dmabuf_fd(host.data(), host.size(), &fd) != CUDA_SUCCESS);
    CHECK(dmabuf_fd(buf.p(), 0, &fd) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("gpudirect: RDMA write flush where the device asks for it", "[cuda][sim][gpudirect]") {
    GP_REQUIRE_SIM();
    auto flushes = reinterpret_cast<unsigned long (*)(void)>(
        dlsym(driver().handle(), "gdrpipe_sim_rdma_flushes"));
    const bool needed = rdma_flush_needed(0);
    if (flushes != nullptr) {
        CHECK(needed); // the simulator reports the HOST flush option
    }
    const unsigned long before = flushes != nullptr ? flushes() : 0;
    CHECK(flush_rdma_writes(0) == CUDA_SUCCESS);
    if (flushes != nullptr) {
        CHECK(flushes() == before + 1);
    }
    CHECK_FALSE(rdma_flush_needed(-1));
    CHECK_FALSE(dmabuf_supported(1000));
}
