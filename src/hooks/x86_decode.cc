// Instruction-length decoder for function prologues (see x86_decode.hpp).
// Covers: legacy prefixes (66 67 F0 F2 F3, segment overrides), REX, the
// one-byte ALU/mov/push/pop/lea/test/xchg/shift/inc/dec forms, immediates of
// 8/16/32/64 bits, ModRM + SIB + disp8/disp32, RIP-relative disp32, jcc/jmp
// rel8/rel32, call rel32, ret, and the 0F two-byte forms seen in compiled
// prologues (hint nops incl. endbr64, cmovcc, setcc, movzx/movsx, imul, jcc
// rel32, common SSE moves). VEX/EVEX and 3-byte 0F 38/0F 3A maps are refused.
#include "gdrpipe/hooks/x86_decode.hpp"

namespace gdrpipe::hooks::x86 {
namespace {

constexpr size_t kMaxInsnLength = 15;

bool fail(const char **why, const char *msg)
{
    if (why != nullptr) {
        *why = msg;
    }
    return false;
}

int32_t read_rel(const uint8_t *p, uint8_t size)
{
    if (size == 1) {
        return static_cast<int8_t>(p[0]);
    }
    uint32_t v = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                 static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    return static_cast<int32_t>(v);
}

enum class Imm : uint8_t { none, b, w, z, v }; // 1, 2, 2/4 (operand size), 2/4/8 (mov r, imm)

struct Form {
    bool modrm = false;
    Imm imm = Imm::none;
    bool ok = true;
};

} // namespace

bool decode(const uint8_t *p, size_t avail, Insn &out, const char **why)
{
    out = Insn{};
    if (avail > kMaxInsnLength) {
        avail = kMaxInsnLength;
    }
    size_t i = 0;
    bool opsize16 = false;
    bool addr32 = false;
    uint8_t last_rep = 0;

    // legacy prefixes
    for (;;) {
        if (i >= avail) {
            return fail(why, "truncated instruction");
        }
        uint8_t b = p[i];
        if (b == 0x66) {
            opsize16 = true;
        } else if (b == 0x67) {
            addr32 = true;
        } else if (b == 0xf2 || b == 0xf3) {
            last_rep = b;
        } else if (b == 0xf0 || b == 0x2e || b == 0x3e || b == 0x26 || b == 0x36 ||
                   b == 0x64 || b == 0x65) {
            // lock, segment overrides / branch hints
        } else {
            break;
        }
        ++i;
    }
    uint8_t rex = 0;
    if ((p[i] & 0xf0) == 0x40) {
        rex = p[i++];
        if (i >= avail) {
            return fail(why, "truncated instruction");
        }
    }
    const bool rexw = (rex & 0x08) != 0;
    out.opcode_offset = static_cast<uint8_t>(i);
    const uint8_t op = p[i++];
    Form f;

    if (op == 0x0f) {
        if (i >= avail) {
            return fail(why, "truncated instruction");
        }
        const uint8_t op2 = p[i++];
        if (op2 >= 0x80 && op2 <= 0x8f) { // jcc rel32
            if (opsize16) {
                return fail(why, "jcc rel16 not supported");
            }
            out.flow = Flow::jcc;
            out.cond = op2 & 0x0f;
            out.rel_offset = static_cast<uint8_t>(i);
            out.rel_size = 4;
            i += 4;
        } else if (op2 == 0x0b) {
            return fail(why, "ud2");
        } else if (op2 == 0x38 || op2 == 0x3a) {
            return fail(why, "three-byte opcode map not supported");
        } else if (op2 == 0x05 || op2 == 0x31 || op2 == 0xa2 || (op2 >= 0xc8 && op2 <= 0xcf)) {
            // syscall, rdtsc, cpuid, bswap r
        } else if (op2 == 0x70 || op2 == 0x71 || op2 == 0x72 || op2 == 0x73 || op2 == 0xa4 ||
                   op2 == 0xac || op2 == 0xba || op2 == 0xc2 || op2 == 0xc4 || op2 == 0xc5 ||
                   op2 == 0xc6) {
            f.modrm = true;
            f.imm = Imm::b;
        } else if ((op2 >= 0x10 && op2 <= 0x1f) || (op2 >= 0x28 && op2 <= 0x2f) ||
                   (op2 >= 0x40 && op2 <= 0x6f) || (op2 >= 0x74 && op2 <= 0x76) ||
                   (op2 >= 0x7e && op2 <= 0x7f) || (op2 >= 0x90 && op2 <= 0x9f) ||
                   op2 == 0xa3 || op2 == 0xa5 || op2 == 0xab || op2 == 0xad || op2 == 0xaf ||
                   op2 == 0xb0 || op2 == 0xb1 || op2 == 0xb3 || op2 == 0xb6 || op2 == 0xb7 ||
                   op2 == 0xbb || op2 == 0xbc || op2 == 0xbd || op2 == 0xbe || op2 == 0xbf ||
                   op2 == 0xc0 || op2 == 0xc1 || (op2 >= 0xd0 && op2 <= 0xfe)) {
            f.modrm = true;
            if (op2 == 0x1e && last_rep == 0xf3 && i < avail && p[i] == 0xfa) {
                out.endbr64 = true;
            }
        } else {
            return fail(why, "unsupported 0F opcode");
        }
    } else if (op < 0x40) {
        const uint8_t lo = op & 7;
        if (lo <= 3) {
            f.modrm = true;
        } else if (lo == 4) {
            f.imm = Imm::b;
        } else if (lo == 5) {
            f.imm = Imm::z;
        } else {
            return fail(why, "invalid opcode in 64-bit mode");
        }
    } else if (op >= 0x50 && op <= 0x5f) {
        // push/pop r
    } else if (op >= 0x70 && op <= 0x7f) {
        out.flow = Flow::jcc;
        out.cond = op & 0x0f;
        out.rel_offset = static_cast<uint8_t>(i);
        out.rel_size = 1;
        i += 1;
    } else if (op >= 0x90 && op <= 0x99) {
        // nop / pause / xchg rAX / cbw / cwd
    } else if (op >= 0xb0 && op <= 0xb7) {
        f.imm = Imm::b;
    } else if (op >= 0xb8 && op <= 0xbf) {
        f.imm = Imm::v;
    } else {
        switch (op) {
        case 0x63: case 0x84: case 0x85: case 0x86: case 0x87: case 0x88: case 0x89:
        case 0x8a: case 0x8b: case 0x8c: case 0x8d: case 0x8e: case 0x8f:
        case 0xd0: case 0xd1: case 0xd2: case 0xd3: case 0xfe:
            f.modrm = true;
            break;
        case 0x68: f.imm = Imm::z; break;
        case 0x6a: f.imm = Imm::b; break;
        case 0x69: f.modrm = true; f.imm = Imm::z; break;
        case 0x6b: case 0x80: case 0x83: case 0xc0: case 0xc1: case 0xc6:
            f.modrm = true;
            f.imm = Imm::b;
            break;
        case 0x81: case 0xc7: f.modrm = true; f.imm = Imm::z; break;
        case 0xa8: f.imm = Imm::b; break;
        case 0xa9: f.imm = Imm::z; break;
        case 0xc9: break; // leave
        case 0xc3: out.flow = Flow::ret; break;
        case 0xc2: out.flow = Flow::ret; f.imm = Imm::w; break;
        case 0xe8: case 0xe9:
            if (opsize16) {
                return fail(why, "rel16 branch not supported");
            }
            out.flow = op == 0xe8 ? Flow::call : Flow::jmp;
            out.rel_offset = static_cast<uint8_t>(i);
            out.rel_size = 4;
            i += 4;
            break;
        case 0xeb:
            out.flow = Flow::jmp;
            out.rel_offset = static_cast<uint8_t>(i);
            out.rel_size = 1;
            i += 1;
            break;
        case 0xf6: case 0xf7: case 0xff: f.modrm = true; break;
        case 0xcc: return fail(why, "int3 (padding or breakpoint)");
        case 0xc4: case 0xc5: case 0x62: return fail(why, "VEX/EVEX not supported");
        default: return fail(why, "unsupported opcode");
        }
    }

    if (f.modrm) {
        if (i >= avail) {
            return fail(why, "truncated instruction");
        }
        const uint8_t modrm = p[i++];
        const uint8_t mod = modrm >> 6;
        const uint8_t reg = (modrm >> 3) & 7;
        const uint8_t rm = modrm & 7;
        if (op == 0xf6 || op == 0xf7) {
            if (reg <= 1) { // test r/m, imm
                f.imm = op == 0xf6 ? Imm::b : Imm::z;
            }
        } else if (op == 0xff) {
            if (reg == 2 || reg == 3) {
                out.flow = Flow::indirect_call;
            } else if (reg == 4 || reg == 5) {
                out.flow = Flow::indirect_jmp;
            } else if (reg == 7) {
                return fail(why, "invalid ff /7");
            }
        } else if (op == 0xfe && reg > 1) {
            return fail(why, "invalid fe /r");
        }
        if (mod != 3) {
            if (rm == 4) {
                if (i >= avail) {
                    return fail(why, "truncated instruction");
                }
                const uint8_t sib = p[i++];
                if (mod == 0 && (sib & 7) == 5) {
                    i += 4;
                }
            } else if (mod == 0 && rm == 5) {
                if (addr32) {
                    return fail(why, "EIP-relative (67 prefix) addressing not supported");
                }
                out.rip_relative = true;
                out.disp_offset = static_cast<uint8_t>(i);
                if (i + 4 <= avail) {
                    out.rel = read_rel(p + i, 4);
                }
                i += 4;
            }
            if (mod == 1) {
                i += 1;
            } else if (mod == 2) {
                i += 4;
            }
        }
    }

    switch (f.imm) {
    case Imm::none: break;
    case Imm::b: i += 1; break;
    case Imm::w: i += 2; break;
    case Imm::z: i += (opsize16 && !rexw) ? 2 : 4; break;
    case Imm::v: i += rexw ? 8 : (opsize16 ? 2 : 4); break;
    }

    if (i > avail) {
        return fail(why, "truncated instruction");
    }
    if (out.rel_size != 0) {
        out.rel = read_rel(p + out.rel_offset, out.rel_size);
    }
    out.length = static_cast<uint8_t>(i);
    return true;
}

} // namespace gdrpipe::hooks::x86
