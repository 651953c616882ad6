// The staged pipeline's control messages (pipeline::CtrlMsg, requester ->
// owner over the wire FIFO): ctrl_check is the gate; the checksum is also
// recomputed so that the field checks behind it are reached.
#include "fuzz_target.hpp"

#include "gdrpipe/pipeline/control.hpp"
#include "gdrpipe/pipeline/ring.hpp"

using namespace gdrpipe::pipeline;

namespace {
void check_accepted(const CtrlMsg &m) {
    GP_FUZZ_ASSERT(m.type == kStageOut || m.type == kStageIn);
    GP_FUZZ_ASSERT(m.req_pid > 0 && m.seg_fd >= 0 && m.xfer_id != 0);
    GP_FUZZ_ASSERT(m.length != 0 && m.remote_addr + m.length >= m.remote_addr);
    GP_FUZZ_ASSERT(m.ring < kMaxRings && segment_bytes(m.ring + 1, m.depth, m.chunk) != 0);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (ctrl_check(data, size) == nullptr) {
        CtrlMsg m;
        std::memcpy(&m, data, sizeof(m));
        check_accepted(m);
    }
    if (size == sizeof(CtrlMsg)) {
        CtrlMsg m;
        std::memcpy(&m, data, sizeof(m));
        ctrl_seal(m);
        if (ctrl_check(&m, sizeof(m)) == nullptr) check_accepted(m);
    }
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    std::vector<FuzzBytes> out;
    for (std::uint16_t type : {kStageOut, kStageIn}) {
        CtrlMsg m{};
        m.type = type;
        m.req_pid = 1234;
        m.seg_fd = 12;
        m.req_start_time = 5555;
        m.seg_id = 77;
        m.ring = 1;
        m.depth = 4;
        m.chunk = 1 << 20;
        m.seg_size = segment_bytes(4, m.depth, m.chunk);
        m.xfer_id = 3;
        m.remote_addr = 0x7f0000000000ull;
        m.length = 3 << 20;
        ctrl_seal(m);
        out.push_back(fuzz_bytes_of(m));
    }
    return out;
}
