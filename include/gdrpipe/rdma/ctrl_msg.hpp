// The RDMA transfer engine's control messages (SEND/RECV on the QP) and the
// immediate data of its chunk writes: the wire layout both ends parse. Used
// by the engine (src/rdma/rdma_transfer*.cc), its tests and the fuzz target.
#pragma once
#include <cstdint>

namespace gdrpipe::rdma::transfer_detail {

constexpr std::uint32_t kCtrlMagic = 0x47504331; // "GPC1"

enum class CtrlType : std::uint32_t { put_begin = 1, get_req, credit, nack, put_abort, write_flush,
                                       flush_ack };

struct CtrlMsg {
    std::uint32_t magic = kCtrlMagic;
    std::uint32_t type = 0;
    std::uint32_t id = 0;
    std::uint32_t key_id = 0;
    std::uint64_t addr = 0;
    std::uint64_t len = 0;
    std::int32_t status = 0;
    std::uint32_t imm = 0; // CREDIT: the imm of the chunk; NACK: 1 = get
    std::uint64_t token = 0; // PUT_BEGIN, GET_REQ, WRITE_FLUSH: the exposure's secret token
};
static_assert(sizeof(CtrlMsg) == 48);

inline std::uint32_t make_imm(bool get_resp, std::uint32_t id, std::uint32_t slot, std::uint32_t chunk) {
    return (get_resp ? 1u << 31 : 0u) | ((id & 0x3ffu) << 21) | ((slot & 0x1fu) << 16) |
           (chunk & 0xffffu);
}
inline bool imm_get(std::uint32_t imm) { return (imm >> 31) != 0; }
inline std::uint32_t imm_id(std::uint32_t imm) { return (imm >> 21) & 0x3ffu; }
inline std::uint32_t imm_slot(std::uint32_t imm) { return (imm >> 16) & 0x1fu; }
inline std::uint32_t imm_chunk(std::uint32_t imm) { return imm & 0xffffu; }

} // namespace gdrpipe::rdma::transfer_detail
