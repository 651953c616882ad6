// A calibration cache key with plausible values (H200 pair over NVLink),
// for tests and fuzz seeds that need one; callers change what they test.
#pragma once
#include "gdrpipe/model/calib_cache.hpp"

namespace gdrpipe::test {

inline model::CalibKey sample_calib_key(const char *local = "GPU-1111aaaa-0000-0000-0000-000000000001",
                                        const char *remote = "GPU-2222bbbb-0000-0000-0000-000000000002") {
    model::CalibKey k;
    k.local_gpu_uuid = local;
    k.remote_gpu_uuid = remote;
    k.local_pci_bus_id = "0000:19:00.0";
    k.remote_pci_bus_id = "0000:3b:00.0";
    k.peer_relation = "nvlink:18";
    k.wire_kind = "cuda_ipc";
    k.driver_version = "580.159.04";
    k.gdrpipe_version = "0.1.0";
    return k;
}

} // namespace gdrpipe::test
