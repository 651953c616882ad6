// The names of the hook types and the installation report (cuda_hooks.hpp).
#include "gdrpipe/hooks/cuda_hooks.hpp"

#include <cstdio>
#include <string>

namespace gdrpipe::hooks {

const char *to_string(EventType t) noexcept
{
    return t == EventType::alloc ? "alloc" : "free";
}

const char *to_string(MemKind k) noexcept
{
    switch (k) {
    case MemKind::device: return "device";
    case MemKind::managed: return "managed";
    case MemKind::host_pinned: return "host_pinned";
    case MemKind::vmm: return "vmm";
    case MemKind::pool: return "pool";
    }
    return "?";
}

const char *to_string(SymbolStatus s) noexcept
{
    switch (s) {
    case SymbolStatus::patched: return "patched";
    case SymbolStatus::not_found: return "not found";
    case SymbolStatus::failed: return "FAILED";
    case SymbolStatus::alias: return "alias";
    }
    return "?";
}

bool Report::complete() const noexcept
{
    if (!error.empty() || failed != 0) {
        return false;
    }
    for (const auto &s : symbols) {
        if (s.name == "cuMemFree_v2" && s.status == SymbolStatus::patched) {
            return true;
        }
    }
    return false;
}

std::string Report::summary() const
{
    std::string out;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%d patched, %d not found, %d failed%s", patched, not_found,
                  failed, complete() ? "" : " (INCOMPLETE)");
    out = buf;
    if (!error.empty()) {
        out += ": " + error;
    }
    out += '\n';
    for (const auto &s : symbols) {
        std::snprintf(buf, sizeof(buf), "%p", s.address);
        out += "  " + s.name + ": " + to_string(s.status) + " " + buf;
        if (!s.reason.empty()) {
            out += " (" + s.reason + ")";
        }
        out += '\n';
    }
    return out;
}

} // namespace gdrpipe::hooks
