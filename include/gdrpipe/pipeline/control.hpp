// Control messages of the staged pipeline (requester -> owner, on the owner's
// wire FIFO with am_id kCtrlAmId, xfer_config.hpp). Network input: checked field by field
// and by checksum before anything is touched.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gdrpipe::pipeline {

inline constexpr uint32_t kCtrlMagic = 0x67706374; // "gpct"
inline constexpr uint16_t kCtrlVersion = 3;

enum CtrlType : uint16_t {
    kStageOut = 1, // owner: copy [remote_addr, +length) into the ring (a get)
    kStageIn = 2,  // owner: copy the ring into [remote_addr, +length) (a put)
};

struct CtrlMsg {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    int32_t req_pid;          // requester (owner of the segment)
    int32_t seg_fd;           // the segment's fd in the requester
    uint64_t req_start_time;  // requester's process start time
    uint64_t seg_id;
    uint64_t seg_size;
    uint32_t ring;
    uint32_t depth;
    uint64_t chunk;
    uint64_t xfer_id;         // nonzero; also stored in the ring header
    uint64_t remote_addr;     // in the owner (receiver of this message)
    uint64_t length;
    uint64_t token;           // the owner's registration token, from the rkey
    uint32_t checksum;        // hash32_words of every byte before it
    uint32_t reserved;
};
static_assert(sizeof(CtrlMsg) == 96);

uint32_t ctrl_checksum(const CtrlMsg &m) noexcept;
void ctrl_seal(CtrlMsg &m) noexcept;
// nullptr when acceptable, else the reason
const char *ctrl_check(const void *data, size_t len) noexcept;

} // namespace gdrpipe::pipeline
