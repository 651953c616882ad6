// Deterministic driver for the fuzz targets where libFuzzer is not linked
// (the normal builds, GCC): runs every input of the corpus folders or files
// given, then a fixed number of mutations of them from a fixed seed, so the
// run and its verdict are the same on every machine. With libFuzzer
// (-Dfuzzer=true, clang) the targets link libFuzzer's main instead.
//   fuzz_X [--mutations N] [--seed S] CORPUS...   replay and mutate
//   fuzz_X --write-seeds DIR                      write the target's seeds
#include "fuzz_target.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace {

struct Rng {
    std::uint64_t s;
    std::uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    std::size_t below(std::size_t n) { return n == 0 ? 0 : std::size_t(next() % n); }
};

bool read_file(const std::string &path, FuzzBytes *out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    return true;
}

void collect(const std::string &path, std::vector<FuzzBytes> *inputs) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "fuzz: %s: not found\n", path.c_str());
        std::exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        FuzzBytes b;
        if (read_file(path, &b)) inputs->push_back(std::move(b));
        return;
    }
    std::vector<std::string> names;
    if (DIR *d = ::opendir(path.c_str())) {
        while (dirent *e = ::readdir(d)) {
            if (e->d_name[0] != '.') names.push_back(path + "/" + e->d_name);
        }
        ::closedir(d);
    }
    std::sort(names.begin(), names.end()); // the same order everywhere
    for (const auto &n : names) collect(n, inputs);
}

// One to four edits of the kinds that break parsers: bit flips, boundary
// values in bytes and 32/64-bit words, truncation, growth, spliced ranges.
void mutate(FuzzBytes &b, Rng &r) {
    static const std::uint64_t kWords[] = {0,          1,          0x7f,        0x80,
                                           0xff,       0xffff,     0x7fffffff,  0x80000000,
                                           0xffffffff, 1ull << 32, ~0ull,       1ull << 40,
                                           4096,       65536,      (1ull << 30) + 1};
    const int edits = 1 + int(r.below(4));
    for (int e = 0; e < edits; ++e) {
        switch (r.below(7)) {
        case 0:
            if (!b.empty()) b[r.below(b.size())] ^= std::uint8_t(1u << r.below(8));
            break;
        case 1:
            if (!b.empty()) b[r.below(b.size())] = std::uint8_t(kWords[r.below(15)]);
            break;
        case 2:
        case 3: {
            const std::size_t w = r.below(2) ? 4 : 8;
            if (b.size() >= w) {
                const std::size_t at = r.below(b.size() / w) * w; // aligned: fields
                const std::uint64_t v = kWords[r.below(15)];
                std::memcpy(&b[at], &v, w);
            }
            break;
        }
        case 4:
            if (!b.empty()) b.resize(r.below(b.size()));
            break;
        case 5: {
            const std::size_t n = 1 + r.below(16);
            for (std::size_t i = 0; i < n; ++i) b.insert(b.begin() + r.below(b.size() + 1), std::uint8_t(r.next()));
            break;
        }
        default:
            if (b.size() > 2) {
                const std::size_t from = r.below(b.size()), to = r.below(b.size());
                const std::size_t n = std::min(b.size() - std::max(from, to), 1 + r.below(32));
                std::memmove(&b[to], &b[from], n);
            }
            break;
        }
    }
}

void run(const FuzzBytes &b) {
    // a copy of exactly the input's size: reads past it are ASan's to find;
    // an empty input is a valid pointer and size 0, as libFuzzer passes it
    static std::uint8_t empty;
    std::vector<std::uint8_t> copy(b);
    LLVMFuzzerTestOneInput(copy.empty() ? &empty : copy.data(), copy.size());
}

} // namespace

int main(int argc, char **argv) {
    long mutations = 2000;
    std::uint64_t seed = 0x9e3779b97f4a7c15ull;
    std::vector<FuzzBytes> inputs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--mutations" && i + 1 < argc) {
            mutations = std::strtol(argv[++i], nullptr, 0);
        } else if (a == "--seed" && i + 1 < argc) {
            seed = std::strtoull(argv[++i], nullptr, 0) | 1;
        } else if (a == "--write-seeds" && i + 1 < argc) {
            const std::string dir = argv[++i];
            ::mkdir(dir.c_str(), 0755);
            int k = 0;
            for (const auto &s : gp_fuzz_seeds()) {
                char name[32];
                std::snprintf(name, sizeof(name), "/seed-%02d", k++);
                std::ofstream f(dir + name, std::ios::binary);
                f.write(reinterpret_cast<const char *>(s.data()), std::streamsize(s.size()));
                if (!f) {
                    std::fprintf(stderr, "fuzz: cannot write %s%s\n", dir.c_str(), name);
                    return 1;
                }
            }
            std::printf("fuzz: wrote %d seeds to %s\n", k, dir.c_str());
            return 0;
        } else {
            collect(a, &inputs);
        }
    }
    for (auto &s : gp_fuzz_seeds()) inputs.push_back(std::move(s));
    for (const auto &b : inputs) run(b);
    Rng r{seed};
    for (long m = 0; m < mutations && !inputs.empty(); ++m) {
        FuzzBytes b = inputs[r.below(inputs.size())];
        mutate(b, r);
        run(b);
    }
    std::printf("fuzz: %zu inputs and %ld mutations, no crash\n", inputs.size(), mutations);
    return 0;
}
