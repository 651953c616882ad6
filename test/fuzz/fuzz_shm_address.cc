// The wire's connection address (wire::ShmAddress) as UCP hands it over from
// a peer: ShmIface::check_address is the gate before anything is opened.
#include "fuzz_target.hpp"

#include "gdrpipe/wire/shm_fifo.hpp"
#include "gdrpipe/wire/shm_iface.hpp"

using namespace gdrpipe::wire;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    if (ShmIface::check_address(data, size) == nullptr) {
        ShmAddress a;
        GP_FUZZ_ASSERT(size >= sizeof(a));
        std::memcpy(&a, data, sizeof(a));
        GP_FUZZ_ASSERT(a.magic == kShmMagic && a.pid > 0 && a.fd >= 0 && a.seg_id != 0);
    }
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    ShmAddress a{};
    a.magic = kShmMagic;
    a.version = kShmVersion;
    a.pid = 4321;
    a.fd = 9;
    a.seg_id = 0x0123456789abcdefull;
    return {fuzz_bytes_of(a)};
}
