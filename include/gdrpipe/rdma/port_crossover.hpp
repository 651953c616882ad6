// The direct/staged threshold of the RDMA wire per (local GPU, port), for
// UCX_GDRPIPE_RDMA_THRESH=auto (docs/rdma.md, "Per-port crossover").
//
// Same machinery as the intra-host wire (pipeline/crossover.hpp): the first
// device-memory transfer through a port obtains the crossover from the shared
// calibration cache, else measures it now with an RdmaProber (loopback
// through that port) under the cross-process lock, stores it and logs
// "crossover for GPU xxxxxxxx..yyyy via <port> (rdma) = N bytes (measured now
// in X ms, stored in ...)" once. Failure: the fallback threshold, a warning,
// nothing stored. The result is process-wide, one per (gpu, port).
#pragma once
#include <gdrpipe/model/calibrate.hpp>
#include <gdrpipe/pipeline/crossover.hpp>
#include <gdrpipe/rdma/prober.hpp>

#include <functional>
#include <memory>
#include <string>

namespace gdrpipe::rdma {

// Cache key of one (GPU, port): wire kind "rdma", the port's name and device
// in the remote fields, the GPU's identity in the local ones.
model::CalibKey port_key(const std::string &gpu_uuid, const std::string &gpu_pci_bus_id,
                         const PortInfo &port, const std::string &driver_version);

// Buffers of one measurement on the GPU: alloc(capacity) must return device
// memory (nullptr + *err on failure), release frees it. The chunk copies are
// PortCalibration::transfer's copiers (null: the core's CUDA copies).
struct ProbeMemory {
    std::function<void *(std::size_t bytes, std::string *err)> alloc;
    std::function<void(void *)> release;
    MemKind kind = MemKind::device;
};

struct PortCalibration {
    int gpu = -1;               // local ordinal (with port.name: the process-wide key)
    std::string gpu_label;      // "GPU 1a2b3c4d..5e6f"
    PortInfo port;
    model::CalibKey key;        // port_key()
    Context *ctx = nullptr;     // the port's context, PD and registrar
    ProtectionDomain *pd = nullptr;
    Registrar *reg = nullptr;
    ProbeMemory mem;
    TransferConfig transfer;    // the endpoints' slot_size x slots = the staged shape
    std::size_t fallback_thresh = model::kNever;
};

// Obtained once per (gpu, port.name) per process; thread-safe, the reference
// stays valid. cfg: mode, dir, budget, wait, max_bytes (largest probed size).
const pipeline::PairChoice &port_choice(const PortCalibration &pc, const pipeline::CrossoverConfig &cfg);

// Forgets every (gpu, port) (tests).
void reset_port_choices();

} // namespace gdrpipe::rdma
