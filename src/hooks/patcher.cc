// x86-64 function patcher; see patcher.hpp for the protocol and its reasons.
#include "gdrpipe/hooks/patcher.hpp"

#include "gdrpipe/hooks/x86_decode.hpp"
#include "gdrpipe/log.hpp"
#include "proc_maps.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace gdrpipe::hooks {
namespace {

constexpr uint8_t kEndbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
constexpr size_t kAbsJumpSize = 14;       // ff 25 00000000 + imm64
constexpr size_t kTrampolineOffset = 16;  // in the stub page, after the jump to the hook
constexpr int64_t kTwoGiB = int64_t{1} << 31;

std::mutex &patch_mutex()
{
    static std::mutex m; // serializes every text write (and its mprotect dance)
    return m;
}

size_t page_size()
{
    static const size_t ps = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return ps;
}

bool fits_i32(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

void put_i32(uint8_t *p, int32_t v)
{
    std::memcpy(p, &v, 4);
}

void emit_abs_jump(uint8_t *p, uintptr_t to)
{
    p[0] = 0xff;
    p[1] = 0x25;
    put_i32(p + 2, 0);
    std::memcpy(p + 6, &to, 8);
}

} // namespace

bool relocate_prologue(const uint8_t *src, size_t src_avail, uintptr_t src_addr,
                       size_t min_bytes, uint8_t *dst, size_t dst_cap, uintptr_t dst_addr,
                       Relocation &out, std::string &error)
{
    out = Relocation{};
    // pass 1: decode
    std::vector<x86::Insn> insns;
    size_t covered = 0;
    while (covered < min_bytes) {
        x86::Insn in;
        const char *why = "?";
        if (!x86::decode(src + covered, src_avail - covered, in, &why)) {
            char buf[160];
            std::snprintf(buf, sizeof(buf), "cannot decode instruction at +%zu (%s); bytes:", covered,
                          why);
            error = buf;
            for (size_t k = covered; k < std::min(src_avail, covered + 8); ++k) {
                std::snprintf(buf, sizeof(buf), " %02x", src[k]);
                error += buf;
            }
            return false;
        }
        if (in.flow == x86::Flow::ret) {
            error = "ret within the first " + std::to_string(min_bytes) + " bytes (function too short)";
            return false;
        }
        covered += in.length;
        if (in.terminator() && covered < min_bytes) {
            error = "unconditional jump before " + std::to_string(min_bytes) +
                    " bytes (function too short)";
            return false;
        }
        insns.push_back(in);
    }
    // pass 2: emit
    size_t o = 0;
    uintptr_t ip = src_addr;
    const uint8_t *s = src;
    auto room = [&](size_t n) { return o + n <= dst_cap; };
    for (const x86::Insn &in : insns) {
        if (in.rel_size != 0) {
            const uintptr_t tgt = in.target(ip);
            if (tgt >= src_addr && tgt < src_addr + covered) {
                error = "branch back into the replaced bytes";
                return false;
            }
            if (in.rel_size == 1) {
                // widen: jcc rel8 -> 0f 8x rel32, jmp rel8 -> e9 rel32 (prefixes dropped: hints only)
                const size_t n = in.flow == x86::Flow::jcc ? 6 : 5;
                if (!room(n)) {
                    error = "trampoline buffer too small";
                    return false;
                }
                const int64_t rel = static_cast<int64_t>(tgt) - static_cast<int64_t>(dst_addr + o + n);
                if (!fits_i32(rel)) {
                    error = "relocated branch out of rel32 range";
                    return false;
                }
                if (in.flow == x86::Flow::jcc) {
                    dst[o] = 0x0f;
                    dst[o + 1] = static_cast<uint8_t>(0x80 | in.cond);
                } else {
                    dst[o] = 0xe9;
                }
                put_i32(dst + o + n - 4, static_cast<int32_t>(rel));
                o += n;
            } else {
                if (!room(in.length)) {
                    error = "trampoline buffer too small";
                    return false;
                }
                std::memcpy(dst + o, s, in.length);
                const int64_t rel =
                    static_cast<int64_t>(tgt) - static_cast<int64_t>(dst_addr + o + in.length);
                if (!fits_i32(rel)) {
                    error = "relocated branch out of rel32 range";
                    return false;
                }
                put_i32(dst + o + in.rel_offset, static_cast<int32_t>(rel));
                o += in.length;
            }
        } else {
            if (!room(in.length)) {
                error = "trampoline buffer too small";
                return false;
            }
            std::memcpy(dst + o, s, in.length);
            if (in.rip_relative) {
                const uintptr_t tgt = in.target(ip);
                const int64_t rel =
                    static_cast<int64_t>(tgt) - static_cast<int64_t>(dst_addr + o + in.length);
                if (!fits_i32(rel)) {
                    error = "relocated RIP-relative operand out of range";
                    return false;
                }
                put_i32(dst + o + in.disp_offset, static_cast<int32_t>(rel));
            }
            o += in.length;
        }
        ip += in.length;
        s += in.length;
    }
    // jump back to the first instruction not relocated
    const uintptr_t back = src_addr + covered;
    const int64_t rel = static_cast<int64_t>(back) - static_cast<int64_t>(dst_addr + o + 5);
    if (fits_i32(rel)) {
        if (!room(5)) {
            error = "trampoline buffer too small";
            return false;
        }
        dst[o] = 0xe9;
        put_i32(dst + o + 1, static_cast<int32_t>(rel));
        o += 5;
    } else {
        if (!room(kAbsJumpSize)) {
            error = "trampoline buffer too small";
            return false;
        }
        emit_abs_jump(dst + o, back);
        o += kAbsJumpSize;
    }
    out.consumed = covered;
    out.emitted = o;
    return true;
}

void *alloc_near(uintptr_t near, size_t size, size_t slack)
{
    const size_t ps = page_size();
    size = (size + ps - 1) & ~(ps - 1);
    const uintptr_t reach = static_cast<uintptr_t>(kTwoGiB) - slack;
    const uintptr_t lo = near > reach + (1u << 20) ? near - reach : (1u << 20);
    const uintptr_t hi = near + reach; // no overflow in user space addresses
    std::vector<detail::MapEntry> maps;
    if (!detail::read_proc_maps(maps)) {
        return nullptr;
    }
    // candidate addresses: the edge of every gap closest to `near`
    std::vector<uintptr_t> cands;
    uintptr_t prev_end = 1u << 20;
    auto consider_gap = [&](uintptr_t gs, uintptr_t ge) {
        gs = (gs + ps - 1) & ~(ps - 1);
        if (ge < gs + size) {
            return;
        }
        uintptr_t a = near <= gs ? gs : (near >= ge - size ? ge - size : (near & ~(ps - 1)));
        if (a >= lo && a + size <= hi) {
            cands.push_back(a);
        }
    };
    for (const auto &m : maps) {
        if (m.start > prev_end) {
            consider_gap(prev_end, m.start);
        }
        prev_end = std::max(prev_end, m.end);
    }
    consider_gap(prev_end, hi);
    std::sort(cands.begin(), cands.end(), [&](uintptr_t a, uintptr_t b) {
        const uintptr_t da = a > near ? a - near : near - a;
        const uintptr_t db = b > near ? b - near : near - b;
        return da < db;
    });
    for (uintptr_t a : cands) {
        void *p = mmap(reinterpret_cast<void *>(a), size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == MAP_FAILED) {
            continue;
        }
        const uintptr_t got = reinterpret_cast<uintptr_t>(p);
        if (got >= lo && got + size <= hi) { // old kernels treat the flag as a hint
            return p;
        }
        munmap(p, size);
    }
    return nullptr;
}

namespace {

// bytes readable from `a` (at most `max`), following adjacent readable mappings
size_t readable_bytes(uintptr_t a, size_t max)
{
    std::vector<detail::MapEntry> maps;
    if (!detail::read_proc_maps(maps)) {
        return max; // cannot tell: assume a normal function body
    }
    uintptr_t end = a;
    for (const auto &m : maps) {
        if (m.start <= end && end < m.end && (m.prot & PROT_READ) != 0) {
            end = m.end;
        }
    }
    return std::min<size_t>(max, end - a);
}

} // namespace

bool prepare_patch(void *target, const void *hook, Patch &p, std::string &error)
{
    p = Patch{};
    if (target == nullptr || hook == nullptr) {
        error = "null target or hook";
        return false;
    }
    auto *t = static_cast<uint8_t *>(target);
    // Decode at most 36 bytes, and never past the end of the mapping.
    const size_t readable = readable_bytes(reinterpret_cast<uintptr_t>(t), 36);
    if (readable < kJumpPatchSize + 4) {
        error = "target is not in a readable mapping";
        return false;
    }
    const size_t skip = std::memcmp(t, kEndbr64, 4) == 0 ? 4 : 0;
    uint8_t *site = t + skip;
    const size_t avail = readable - skip;
    const size_t ps = page_size();
    const size_t stub_size = ps;
    void *stub = alloc_near(reinterpret_cast<uintptr_t>(site), stub_size, 1u << 24);
    if (stub == nullptr) {
        error = "no free page within +-2 GB of the target";
        return false;
    }
    auto *sp = static_cast<uint8_t *>(stub);
    std::memset(sp, 0xcc, stub_size);
    emit_abs_jump(sp, reinterpret_cast<uintptr_t>(hook));
    uint8_t *tramp = sp + kTrampolineOffset;
    size_t o = 0;
    if (skip != 0) {
        std::memcpy(tramp, kEndbr64, 4);
        o = 4;
    }
    Relocation r;
    if (!relocate_prologue(site, avail, reinterpret_cast<uintptr_t>(site), kJumpPatchSize,
                           tramp + o, stub_size - kTrampolineOffset - o,
                           reinterpret_cast<uintptr_t>(tramp + o), r, error)) {
        munmap(stub, stub_size);
        return false;
    }
    const int64_t rel = reinterpret_cast<intptr_t>(sp) -
                        reinterpret_cast<intptr_t>(site + kJumpPatchSize);
    if (!fits_i32(rel)) {
        munmap(stub, stub_size);
        error = "stub page out of rel32 range";
        return false;
    }
    if (mprotect(stub, stub_size, PROT_READ | PROT_EXEC) != 0) {
        error = std::string("mprotect(stub, r-x): ") + std::strerror(errno);
        munmap(stub, stub_size);
        return false;
    }
    __builtin___clear_cache(reinterpret_cast<char *>(sp), reinterpret_cast<char *>(sp + stub_size));
    p.target = target;
    p.site = site;
    p.trampoline = tramp;
    p.stub = stub;
    p.hook = hook;
    p.relocated = r.consumed;
    std::memcpy(p.saved, site, kJumpPatchSize);
    return true;
}

namespace {

int protection_of(uintptr_t a)
{
    std::vector<detail::MapEntry> maps;
    if (detail::read_proc_maps(maps)) {
        for (const auto &m : maps) {
            if (a >= m.start && a < m.end) {
                return m.prot;
            }
        }
    }
    return -1;
}

typedef uint64_t __attribute__((may_alias)) u64_alias;

// Writes the 5 bytes at `site` as atomically as the alignment allows (see header).
void write_jump_bytes(uint8_t *site, const uint8_t bytes[kJumpPatchSize])
{
    const uintptr_t a = reinterpret_cast<uintptr_t>(site);
    if ((a & 7) + kJumpPatchSize <= 8) {
        auto *q = reinterpret_cast<u64_alias *>(a & ~uintptr_t{7});
        uint64_t v = __atomic_load_n(q, __ATOMIC_RELAXED);
        std::memcpy(reinterpret_cast<uint8_t *>(&v) + (a & 7), bytes, kJumpPatchSize);
        __atomic_store_n(q, v, __ATOMIC_SEQ_CST);
    } else if ((a & 15) + kJumpPatchSize <= 16) {
        auto *q = reinterpret_cast<u64_alias *>(a & ~uintptr_t{15});
        uint64_t lo = q[0];
        uint64_t hi = q[1];
        for (;;) {
            uint8_t buf[16];
            std::memcpy(buf, &lo, 8);
            std::memcpy(buf + 8, &hi, 8);
            std::memcpy(buf + (a & 15), bytes, kJumpPatchSize);
            uint64_t nlo;
            uint64_t nhi;
            std::memcpy(&nlo, buf, 8);
            std::memcpy(&nhi, buf + 8, 8);
            bool ok;
            __asm__ __volatile__("lock cmpxchg16b %1\n\tsete %0"
                                 : "=q"(ok), "+m"(*q), "+a"(lo), "+d"(hi)
                                 : "b"(nlo), "c"(nhi)
                                 : "memory", "cc");
            if (ok) {
                break;
            }
        }
    } else {
        for (size_t k = 1; k < kJumpPatchSize; ++k) {
            __atomic_store_n(site + k, bytes[k], __ATOMIC_RELAXED);
        }
        __atomic_store_n(site, bytes[0], __ATOMIC_SEQ_CST);
    }
}

bool write_code(uint8_t *site, const uint8_t bytes[kJumpPatchSize], std::string &error)
{
    const size_t ps = page_size();
    const uintptr_t a = reinterpret_cast<uintptr_t>(site);
    const uintptr_t start = a & ~(ps - 1);
    const uintptr_t end = (a + kJumpPatchSize + ps - 1) & ~(ps - 1);
    int prot_first = protection_of(start);
    int prot_last = protection_of(end - ps);
    if (prot_first < 0) {
        prot_first = PROT_READ | PROT_EXEC;
    }
    if (prot_last < 0) {
        prot_last = prot_first;
    }
    void *pg = reinterpret_cast<void *>(start);
    if (mprotect(pg, end - start, PROT_READ | PROT_WRITE | PROT_EXEC) != 0 &&
        mprotect(pg, end - start, PROT_READ | PROT_WRITE) != 0) {
        error = std::string("mprotect(text, rw): ") + std::strerror(errno);
        return false;
    }
    write_jump_bytes(site, bytes);
    bool ok = true;
    if (end - start > ps) {
        ok = mprotect(pg, ps, prot_first) == 0 &&
             mprotect(reinterpret_cast<void *>(start + ps), ps, prot_last) == 0;
    } else {
        ok = mprotect(pg, ps, prot_first) == 0;
    }
    if (!ok) {
        // the patch is in place; only the protection could not be restored
        GP_WARN("hooks: cannot restore protection of %p: %s", pg, std::strerror(errno));
    }
    __builtin___clear_cache(reinterpret_cast<char *>(site),
                            reinterpret_cast<char *>(site + kJumpPatchSize));
    return true;
}

} // namespace

bool apply_patch(Patch &p, std::string &error)
{
    if (p.stub == nullptr) {
        error = "patch not prepared";
        return false;
    }
    if (p.applied) {
        return true;
    }
    std::lock_guard<std::mutex> g(patch_mutex());
    auto *site = static_cast<uint8_t *>(p.site);
    if (std::memcmp(site, p.saved, kJumpPatchSize) != 0) {
        error = "target code changed since the patch was prepared";
        return false;
    }
    uint8_t jump[kJumpPatchSize];
    jump[0] = 0xe9;
    const int64_t rel = reinterpret_cast<intptr_t>(p.stub) -
                        reinterpret_cast<intptr_t>(site + kJumpPatchSize);
    put_i32(jump + 1, static_cast<int32_t>(rel));
    if (!write_code(site, jump, error)) {
        return false;
    }
    p.applied = true;
    return true;
}

bool unpatch_function(Patch &p, std::string &error)
{
    if (!p.applied) {
        return true;
    }
    std::lock_guard<std::mutex> g(patch_mutex());
    if (!write_code(static_cast<uint8_t *>(p.site), p.saved, error)) {
        return false;
    }
    p.applied = false;
    return true;
}

} // namespace gdrpipe::hooks
