// Reading /proc/self/maps (internal to src/hooks).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gdrpipe::hooks::detail {

struct MapEntry {
    uintptr_t start = 0;
    uintptr_t end = 0;
    int prot = 0; // PROT_READ | PROT_WRITE | PROT_EXEC
    bool shared = false;
    std::string path;
};

// All mappings of the process, sorted by address. False if the file cannot be read.
bool read_proc_maps(std::vector<MapEntry> &out);

} // namespace gdrpipe::hooks::detail
