#include "proc_maps.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace gdrpipe::hooks::detail {

bool read_proc_maps(std::vector<MapEntry> &out)
{
    out.clear();
    FILE *f = std::fopen("/proc/self/maps", "re");
    if (f == nullptr) {
        return false;
    }
    char *line = nullptr;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        uintptr_t start = 0;
        uintptr_t end = 0;
        char perms[8] = {};
        int path_at = 0;
        if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &start, &end,
                        perms, &path_at) < 3) {
            continue;
        }
        MapEntry e;
        e.start = start;
        e.end = end;
        e.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                 (perms[2] == 'x' ? PROT_EXEC : 0);
        e.shared = perms[3] == 's';
        if (path_at > 0) {
            std::string p = line + path_at;
            while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) {
                p.pop_back();
            }
            e.path = std::move(p);
        }
        out.push_back(std::move(e));
    }
    std::free(line);
    std::fclose(f);
    return true;
}

} // namespace gdrpipe::hooks::detail
