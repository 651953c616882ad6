// Control message sealing and validation.
#include "gdrpipe/pipeline/control.hpp"

#include "gdrpipe/bytes.hpp"
#include "gdrpipe/pipeline/ring.hpp"

#include <cstring>

namespace gdrpipe::pipeline {

uint32_t ctrl_checksum(const CtrlMsg &m) noexcept {
    return gdrpipe::hash32_words(&m, offsetof(CtrlMsg, checksum));
}

void ctrl_seal(CtrlMsg &m) noexcept {
    m.magic = kCtrlMagic;
    m.version = kCtrlVersion;
    m.reserved = 0;
    m.checksum = ctrl_checksum(m);
}

const char *ctrl_check(const void *data, size_t len) noexcept {
    if (data == nullptr || len != sizeof(CtrlMsg)) return "wrong size";
    CtrlMsg m;
    std::memcpy(&m, data, sizeof(m));
    if (m.magic != kCtrlMagic) return "bad magic";
    if (m.version != kCtrlVersion) return "unsupported version";
    if (m.checksum != ctrl_checksum(m)) return "checksum mismatch";
    if (m.type != kStageOut && m.type != kStageIn) return "unknown type";
    if (m.req_pid <= 0 || m.seg_fd < 0) return "bad requester";
    if (m.xfer_id == 0) return "no transfer id";
    if (m.length == 0 || m.remote_addr + m.length < m.remote_addr) return "bad range";
    if (m.ring >= kMaxRings) return "bad ring";
    if (segment_bytes(m.ring + 1, m.depth, m.chunk) == 0) return "bad ring shape";
    return nullptr;
}

} // namespace gdrpipe::pipeline
