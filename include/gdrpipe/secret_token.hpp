// Unguessable 64-bit tokens: what a registration hands to the peers that get
// its remote key, and what the owner of the memory asks back before it serves
// a staged request for it (security review M4). SipHash-2-4 of a counter and
// the pid under a per-process key from the kernel's random source, so a peer
// that sees any number of tokens cannot compute another. Never 0 (0 means "no
// token").
#pragma once
#include <cstdint>

namespace gdrpipe {

std::uint64_t new_secret_token() noexcept;

} // namespace gdrpipe
