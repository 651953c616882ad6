// A chunk copier whose copies cost nothing and copy nothing (calibration
// tests: the fabric's parameters alone decide the timings).
#pragma once
#include <gdrpipe/pipeline/chunk_pipe.hpp>

namespace rdma_test {

class FreeCopier final : public gdrpipe::pipeline::ChunkCopier {
  public:
    gdrpipe::cuda::Status start(const gdrpipe::pipeline::LocalMem &, std::size_t, std::size_t,
                                char *, bool, gdrpipe::pipeline::CopyJob *) override {
        return {};
    }
    int poll(gdrpipe::pipeline::CopyJob *, std::string *) override { return 1; }
    void wait(gdrpipe::pipeline::CopyJob *) noexcept override {}
};

} // namespace rdma_test
