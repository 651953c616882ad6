// The RDMA endpoint address (rdma/connection.hpp) a remote peer sends:
// unpacked as received and, to get past its checksum, with the checksum
// recomputed. An accepted address must describe a staging area that does
// not wrap and repack to the same bytes.
#include "fuzz_target.hpp"

#include "gdrpipe/bytes.hpp"
#include "gdrpipe/rdma/connection.hpp"

using namespace gdrpipe::rdma;

namespace {
void check(std::span<const std::uint8_t> b) {
    auto a = unpack_ep_address(b);
    if (!a) return;
    const EpAddress &e = a.value();
    GP_FUZZ_ASSERT(e.stage_slots <= kMaxStageSlots && e.stage_slot_size <= kMaxStageSlotSize);
    GP_FUZZ_ASSERT(e.stage_addr + std::uint64_t{e.stage_slots} * e.stage_slot_size >= e.stage_addr);
    const auto again = pack_ep_address(e);
    GP_FUZZ_ASSERT(again.size() == b.size() && std::memcmp(again.data(), b.data(), b.size()) == 0);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    check({data, size});
    if (size == kEpAddressSize) {
        FuzzBytes b(data, data + size);
        gdrpipe::put_le<std::uint32_t>(&b[56], gdrpipe::fnv1a32(b.data(), 56));
        check(b);
    }
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    std::vector<FuzzBytes> out;
    for (int staged = 0; staged < 2; ++staged) {
        EpAddress a;
        a.qp.lid = 7;
        a.qp.qpn = 0x123;
        a.qp.psn = 0x456;
        a.qp.mtu = 4096;
        if (staged) {
            a.stage_addr = 0x7f0000000000ull;
            a.stage_rkey = 99;
            a.stage_slots = 4;
            a.stage_slot_size = 1 << 20;
        }
        out.push_back(pack_ep_address(a));
    }
    return out;
}
