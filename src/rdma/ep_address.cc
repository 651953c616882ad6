// The endpoint address blob: fixed little-endian layout, version 1.
//
//   off size field
//     0   4  magic "GPRA"
//     4   1  version (1)
//     5   1  reserved (0)
//     6   2  lid
//     8  16  gid
//    24   4  qpn (< 2^24, != 0)
//    28   4  psn (< 2^24)
//    32   4  mtu (256, 512, 1024, 2048 or 4096)
//    36   8  stage_addr
//    44   4  stage_rkey
//    48   4  stage_slots (<= 32)
//    52   4  stage_slot_size (multiple of 4096, <= 1 GiB)
//    56   4  FNV-1a of bytes 0..55
#include <gdrpipe/bytes.hpp>
#include <gdrpipe/rdma/connection.hpp>

#include <cerrno>
#include <cstring>

namespace gdrpipe::rdma {

namespace {
constexpr std::uint8_t kMagic[4] = {'G', 'P', 'R', 'A'};
constexpr std::uint8_t kVersion = 1;

Error bad(const char *why) { return make_error(-EINVAL, std::string("rdma address: ") + why); }
} // namespace

std::vector<std::uint8_t> pack_ep_address(const EpAddress &a) {
    std::vector<std::uint8_t> b(kEpAddressSize, 0);
    std::memcpy(b.data(), kMagic, 4);
    b[4] = kVersion;
    put_le<std::uint16_t>(&b[6], a.qp.lid);
    std::memcpy(&b[8], a.qp.gid.data(), 16);
    put_le<std::uint32_t>(&b[24], a.qp.qpn);
    put_le<std::uint32_t>(&b[28], a.qp.psn);
    put_le<std::uint32_t>(&b[32], a.qp.mtu);
    put_le<std::uint64_t>(&b[36], a.stage_addr);
    put_le<std::uint32_t>(&b[44], a.stage_rkey);
    put_le<std::uint32_t>(&b[48], a.stage_slots);
    put_le<std::uint32_t>(&b[52], a.stage_slot_size);
    put_le<std::uint32_t>(&b[56], fnv1a32(b.data(), 56));
    return b;
}

Expected<EpAddress> unpack_ep_address(std::span<const std::uint8_t> b) {
    if (b.size() < kEpAddressSize) {
        return bad("truncated");
    }
    if (b.size() > kEpAddressSize) {
        return bad("trailing bytes");
    }
    if (std::memcmp(b.data(), kMagic, 4) != 0) {
        return bad("bad magic");
    }
    if (b[4] != kVersion) {
        return bad("unsupported version");
    }
    if (b[5] != 0) {
        return bad("reserved byte set");
    }
    if (get_le<std::uint32_t>(&b[56]) != fnv1a32(b.data(), 56)) {
        return bad("checksum mismatch");
    }
    EpAddress a;
    a.qp.lid = get_le<std::uint16_t>(&b[6]);
    std::memcpy(a.qp.gid.data(), &b[8], 16);
    a.qp.qpn = get_le<std::uint32_t>(&b[24]);
    a.qp.psn = get_le<std::uint32_t>(&b[28]);
    a.qp.mtu = get_le<std::uint32_t>(&b[32]);
    a.stage_addr = get_le<std::uint64_t>(&b[36]);
    a.stage_rkey = get_le<std::uint32_t>(&b[44]);
    a.stage_slots = get_le<std::uint32_t>(&b[48]);
    a.stage_slot_size = get_le<std::uint32_t>(&b[52]);
    if (a.qp.qpn == 0 || a.qp.qpn >= (1u << 24)) {
        return bad("qpn out of range");
    }
    if (a.qp.psn >= (1u << 24)) {
        return bad("psn out of range");
    }
    if (a.qp.mtu != 256 && a.qp.mtu != 512 && a.qp.mtu != 1024 && a.qp.mtu != 2048 &&
        a.qp.mtu != 4096) {
        return bad("bad mtu");
    }
    bool gid_zero = true;
    for (std::uint8_t g : a.qp.gid) {
        gid_zero = gid_zero && g == 0;
    }
    if (a.qp.lid == 0 && gid_zero) {
        return bad("neither lid nor gid");
    }
    const bool no_stage = a.stage_slots == 0;
    if (no_stage != (a.stage_slot_size == 0) || no_stage != (a.stage_addr == 0)) {
        return bad("inconsistent staging area");
    }
    if (a.stage_slots > kMaxStageSlots || a.stage_slot_size % 4096 != 0 ||
        a.stage_slot_size > kMaxStageSlotSize) {
        return bad("staging area out of range");
    }
    if (!no_stage && a.stage_addr + std::uint64_t{a.stage_slots} * a.stage_slot_size < a.stage_addr) {
        return bad("staging area wraps");
    }
    return a;
}

} // namespace gdrpipe::rdma
