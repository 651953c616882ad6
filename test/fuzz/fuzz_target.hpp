// A fuzz target: LLVMFuzzerTestOneInput (libFuzzer's entry point) over one
// parser of bytes gdrpipe receives from peers or reads from files, plus
// valid seed inputs built with the matching writer (the committed corpus is
// made from them: fuzz_replay --write-seeds DIR).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

using FuzzBytes = std::vector<std::uint8_t>;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);
std::vector<FuzzBytes> gp_fuzz_seeds();

template <class T> FuzzBytes fuzz_bytes_of(const T &v) {
    FuzzBytes b(sizeof(T));
    std::memcpy(b.data(), &v, sizeof(T));
    return b;
}

// An invariant the parser promised; aborts (a crash to the fuzzer).
#define GP_FUZZ_ASSERT(cond)                                                                   \
    do {                                                                                       \
        if (!(cond)) __builtin_trap();                                                         \
    } while (0)
