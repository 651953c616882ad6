#include "gdrpipe/model/calib_cache.hpp"

#include "gdrpipe/log.hpp"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace gdrpipe::model {
namespace {

constexpr const char *kMagic = "gdrpipe-crossover-cache 1";
constexpr std::size_t kMaxFile = std::size_t{1} << 20;

std::uint64_t fnv1a(std::uint64_t h, const void *data, std::size_t n) noexcept {
    const auto *p = static_cast<const unsigned char *>(data);
    for (std::size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
constexpr std::uint64_t kFnvBasis = 0xcbf29ce484222325ull;

// Values are single tokens: bytes outside '!'..'~' and '%' become %XX.
std::string escape(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (c <= 0x20 || c >= 0x7f || c == '%') {
            char b[4];
            std::snprintf(b, sizeof(b), "%%%02X", c);
            out += b;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out.empty() ? std::string("%") : out; // lone "%" = empty string
}

int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool unescape(const std::string &s, std::string *out) {
    out->clear();
    if (s == "%") return true;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            *out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return false;
        const int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
        if (hi < 0 || lo < 0) return false;
        *out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return true;
}

std::string fmt_d(double v) {
    char b[40];
    std::snprintf(b, sizeof(b), "%.17g", v);
    return b;
}
std::string fmt_z(std::size_t v) { return v == kNever ? std::string("never") : std::to_string(v); }
std::string fmt_opt(const std::optional<double> &v) { return v ? fmt_d(*v) : std::string("-"); }

bool parse_d(const std::string &s, double *v) {
    if (s.empty()) return false;
    char *end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && !std::isnan(*v);
}
bool parse_z(const std::string &s, std::size_t *v) {
    if (s == "never") {
        *v = kNever;
        return true;
    }
    if (s.empty() || s[0] == '-') return false;
    char *end = nullptr;
    errno = 0;
    const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
    if (errno != 0 || end != s.c_str() + s.size()) return false;
    *v = static_cast<std::size_t>(x);
    return true;
}
bool parse_i(const std::string &s, int *v) {
    std::size_t z = 0;
    if (!parse_z(s, &z) || z > 1000000000u) return false;
    *v = static_cast<int>(z);
    return true;
}
bool parse_b(const std::string &s, bool *v) {
    if (s != "0" && s != "1") return false;
    *v = s == "1";
    return true;
}
bool parse_opt(const std::string &s, std::optional<double> *v) {
    if (s == "-") {
        v->reset();
        return true;
    }
    double d = 0;
    if (!parse_d(s, &d)) return false;
    *v = d;
    return true;
}

std::vector<std::string> split(const std::string &line) {
    std::vector<std::string> t;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        std::size_t j = i;
        while (j < line.size() && line[j] != ' ') ++j;
        if (j > i) t.push_back(line.substr(i, j - i));
        i = j;
    }
    return t;
}

std::string fit_line(const char *name, const PathFit &f) {
    return std::string(name) + " " + (f.available ? "1" : "0") + " " + fmt_d(f.latency_s) + " " +
           fmt_d(f.bandwidth_Bps) + " " + fmt_d(f.per_chunk_s) + " " + fmt_z(f.chunk_bytes) + " " +
           (f.chunked ? "1" : "0") + " " + fmt_d(f.rms_rel_err) + " " + std::to_string(f.points) + " " +
           std::to_string(f.rejected) + "\n";
}

bool parse_fit(const std::vector<std::string> &t, PathFit *f) {
    return t.size() == 10 && parse_b(t[1], &f->available) && parse_d(t[2], &f->latency_s) &&
           parse_d(t[3], &f->bandwidth_Bps) && parse_d(t[4], &f->per_chunk_s) &&
           parse_z(t[5], &f->chunk_bytes) && parse_b(t[6], &f->chunked) && parse_d(t[7], &f->rms_rel_err) &&
           parse_i(t[8], &f->points) && parse_i(t[9], &f->rejected);
}

struct KeyField {
    const char *name;
    std::string CalibKey::*member;
};
const KeyField kKeyFields[] = {
    {"key.local_gpu_uuid", &CalibKey::local_gpu_uuid},
    {"key.remote_gpu_uuid", &CalibKey::remote_gpu_uuid},
    {"key.local_pci_bus_id", &CalibKey::local_pci_bus_id},
    {"key.remote_pci_bus_id", &CalibKey::remote_pci_bus_id},
    {"key.peer_relation", &CalibKey::peer_relation},
    {"key.wire_kind", &CalibKey::wire_kind},
    {"key.driver_version", &CalibKey::driver_version},
    {"key.gdrpipe_version", &CalibKey::gdrpipe_version},
};

bool fail(std::string *why, const std::string &msg) {
    if (why != nullptr) *why = msg;
    return false;
}

// text split at '\n' (the newlines dropped; a last line without one kept)
std::vector<std::string> split_lines(const std::string &text) {
    std::vector<std::string> lines;
    std::size_t i = 0;
    while (i < text.size()) {
        const std::size_t j = text.find('\n', i);
        if (j == std::string::npos) {
            lines.push_back(text.substr(i));
            break;
        }
        lines.push_back(text.substr(i, j - i));
        i = j + 1;
    }
    return lines;
}

// The magic line and the key lines into *key; with `expect`, each field must
// equal its own (a stale file).
bool parse_key(const std::vector<std::string> &lines, CalibKey *key, const CalibKey *expect, std::string *why) {
    if (lines.empty() || lines[0] != kMagic) return fail(why, "not a gdrpipe crossover cache file (v1)");
    std::size_t li = 1;
    for (const KeyField &kf : kKeyFields) {
        if (li >= lines.size()) return fail(why, "truncated key");
        const std::vector<std::string> t = split(lines[li++]);
        std::string &v = key->*kf.member;
        if (t.size() != 2 || t[0] != kf.name || !unescape(t[1], &v)) {
            return fail(why, std::string("malformed ") + kf.name);
        }
        if (expect != nullptr && v != expect->*kf.member) {
            return fail(why, std::string("stale: ") + kf.name + " is '" + v + "', expected '" +
                                 expect->*kf.member + "'");
        }
    }
    return true;
}

bool parse_body(const std::vector<std::string> &lines, const CalibKey &expect, CalibRecord *rec,
                std::string *why) {
    CalibKey key;
    if (!parse_key(lines, &key, &expect, why)) return false;
    std::size_t li = 1 + std::size(kKeyFields);
    PathFit direct, staged;
    Crossover x;
    std::vector<MeasuredPoint> table;
    bool have_fit_d = false, have_fit_s = false, have_thr = false, have_kind = false, have_pp = false;
    for (; li < lines.size(); ++li) {
        const std::vector<std::string> t = split(lines[li]);
        if (t.empty()) return fail(why, "empty line");
        const std::string &k = t[0];
        bool ok = true;
        if (k == "date") {
            ok = t.size() == 2 && unescape(t[1], &rec->date);
        } else if (k == "elapsed_s") {
            ok = t.size() == 2 && parse_d(t[1], &rec->elapsed_s);
        } else if (k == "budget_s") {
            ok = t.size() == 2 && parse_d(t[1], &rec->budget_s);
        } else if (k == "budget_exhausted") {
            ok = t.size() == 2 && parse_b(t[1], &rec->budget_exhausted);
        } else if (k == "probes") {
            ok = t.size() == 2 && parse_z(t[1], &rec->probes);
        } else if (k == "pipeline") {
            ok = t.size() == 3 && parse_z(t[1], &rec->pipeline.chunk_bytes) && parse_i(t[2], &rec->pipeline.depth) &&
                 rec->pipeline.chunk_bytes > 0 && rec->pipeline.depth > 0;
            have_pp = ok;
        } else if (k == "online") {
            OnlineClass oc;
            ok = t.size() == 5 && parse_z(t[1], &oc.bytes) && parse_i(t[2], &oc.samples) &&
                 parse_d(t[3], &oc.direct_s) && parse_d(t[4], &oc.staged_s) && oc.bytes > 0 && oc.samples > 0 &&
                 (rec->online.empty() || rec->online.back().bytes < oc.bytes);
            if (ok) rec->online.push_back(oc);
        } else if (k == "tune_bytes") {
            ok = t.size() == 2 && parse_z(t[1], &rec->tune_bytes);
        } else if (k == "trial") {
            PipelineTrial tr;
            ok = t.size() == 5 && parse_z(t[1], &tr.params.chunk_bytes) && parse_i(t[2], &tr.params.depth) &&
                 parse_d(t[3], &tr.time_s) && parse_i(t[4], &tr.samples);
            if (ok) rec->pipeline_trials.push_back(tr);
        } else if (k == "fit.direct") {
            ok = parse_fit(t, &direct);
            have_fit_d = ok;
        } else if (k == "fit.staged") {
            ok = parse_fit(t, &staged);
            have_fit_s = ok;
        } else if (k == "threshold") {
            ok = t.size() == 2 && parse_z(t[1], &x.threshold);
            have_thr = ok;
        } else if (k == "kind") {
            ok = t.size() == 2;
            if (ok) {
                ok = false;
                for (int i = 0; i <= static_cast<int>(CrossoverKind::staged_below); ++i) {
                    if (t[1] == crossover_kind_name(static_cast<CrossoverKind>(i))) {
                        x.kind = static_cast<CrossoverKind>(i);
                        ok = true;
                    }
                }
            }
            have_kind = ok;
        } else if (k == "below") {
            ok = t.size() == 2 && (t[1] == "direct" || t[1] == "staged");
            if (ok) x.below = t[1] == "direct" ? Path::direct : Path::staged;
        } else if (k == "switches") {
            ok = t.size() == 2 && parse_i(t[1], &x.measured_switches);
        } else if (k == "regret") {
            ok = t.size() == 2 && parse_d(t[1], &x.regret);
        } else if (k == "staged_range") {
            SizeRange r;
            ok = t.size() == 3 && parse_z(t[1], &r.lo) && parse_z(t[2], &r.hi);
            if (ok) x.staged_ranges.push_back(r);
        } else if (k == "point") {
            MeasuredPoint p;
            ok = t.size() == 4 && parse_z(t[1], &p.bytes) && parse_opt(t[2], &p.direct_s) &&
                 parse_opt(t[3], &p.staged_s);
            if (ok) table.push_back(p);
        } else {
            ok = false;
        }
        if (!ok) return fail(why, "malformed line " + std::to_string(li + 1) + ": " + lines[li]);
    }
    if (!have_fit_d || !have_fit_s || !have_thr || !have_kind || !have_pp) {
        return fail(why, "incomplete record");
    }
    rec->model = CostModel::restore(direct, staged, x, std::move(table));
    return true;
}

} // namespace

std::uint64_t key_hash(const CalibKey &key) noexcept {
    std::uint64_t h = kFnvBasis;
    for (const KeyField &kf : kKeyFields) {
        const std::string &v = key.*kf.member;
        const std::uint64_t len = v.size();
        h = fnv1a(h, &len, sizeof(len));
        h = fnv1a(h, v.data(), v.size());
    }
    return h;
}

std::string serialize_record(const CalibKey &key, const CalibRecord &rec) {
    std::string s = std::string(kMagic) + "\n";
    for (const KeyField &kf : kKeyFields) s += std::string(kf.name) + " " + escape(key.*kf.member) + "\n";
    s += "date " + escape(rec.date) + "\n";
    s += "elapsed_s " + fmt_d(rec.elapsed_s) + "\n";
    s += "budget_s " + fmt_d(rec.budget_s) + "\n";
    s += std::string("budget_exhausted ") + (rec.budget_exhausted ? "1" : "0") + "\n";
    s += "probes " + fmt_z(rec.probes) + "\n";
    s += "pipeline " + fmt_z(rec.pipeline.chunk_bytes) + " " + std::to_string(rec.pipeline.depth) + "\n";
    s += "tune_bytes " + fmt_z(rec.tune_bytes) + "\n";
    for (const OnlineClass &oc : rec.online) {
        s += "online " + fmt_z(oc.bytes) + " " + std::to_string(oc.samples) + " " + fmt_d(oc.direct_s) + " " +
             fmt_d(oc.staged_s) + "\n";
    }
    for (const PipelineTrial &t : rec.pipeline_trials) {
        s += "trial " + fmt_z(t.params.chunk_bytes) + " " + std::to_string(t.params.depth) + " " +
             fmt_d(t.time_s) + " " + std::to_string(t.samples) + "\n";
    }
    const CostModel &m = rec.model;
    s += fit_line("fit.direct", m.fit_of(Path::direct));
    s += fit_line("fit.staged", m.fit_of(Path::staged));
    const Crossover &x = m.crossover();
    s += "threshold " + fmt_z(x.threshold) + "\n";
    s += std::string("kind ") + crossover_kind_name(x.kind) + "\n";
    s += std::string("below ") + path_name(x.below) + "\n";
    s += "switches " + std::to_string(x.measured_switches) + "\n";
    s += "regret " + fmt_d(x.regret) + "\n";
    for (const SizeRange &r : x.staged_ranges) s += "staged_range " + fmt_z(r.lo) + " " + fmt_z(r.hi) + "\n";
    for (const MeasuredPoint &p : m.table()) {
        s += "point " + fmt_z(p.bytes) + " " + fmt_opt(p.direct_s) + " " + fmt_opt(p.staged_s) + "\n";
    }
    char ck[40];
    std::snprintf(ck, sizeof(ck), "checksum %016" PRIx64 "\n", fnv1a(kFnvBasis, s.data(), s.size()));
    return s + ck;
}

std::optional<CalibKey> read_record_key(const std::string &text) {
    CalibKey key;
    if (!parse_key(split_lines(text), &key, nullptr, nullptr)) return std::nullopt;
    return key;
}

std::optional<CalibRecord> parse_record(const std::string &text, const CalibKey &expect, std::string *why) {
    // the last line must be the checksum of everything before it
    if (text.size() < 2 || text.back() != '\n') {
        fail(why, "truncated file");
        return std::nullopt;
    }
    const std::size_t start = text.rfind('\n', text.size() - 2);
    if (start == std::string::npos) {
        fail(why, "truncated file");
        return std::nullopt;
    }
    const std::string body = text.substr(0, start + 1);
    const std::string last = text.substr(start + 1, text.size() - start - 2);
    char want[40];
    std::snprintf(want, sizeof(want), "checksum %016" PRIx64, fnv1a(kFnvBasis, body.data(), body.size()));
    if (last != want) {
        fail(why, last.rfind("checksum ", 0) == 0 ? "checksum mismatch" : "no checksum line (truncated?)");
        return std::nullopt;
    }
    CalibRecord rec;
    if (!parse_body(split_lines(body), expect, &rec, why)) return std::nullopt;
    return rec;
}

CalibCache::CalibCache(std::string dir) : dir_(dir.empty() ? default_dir() : std::move(dir)) {}

std::string CalibCache::default_dir() {
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/gdrpipe";
    const char *home = std::getenv("HOME");
    if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/gdrpipe";
    return {};
}

std::string CalibCache::path_for(const CalibKey &key) const {
    char name[48];
    std::snprintf(name, sizeof(name), "crossover-%016" PRIx64 ".txt", key_hash(key));
    return dir_.empty() ? std::string() : dir_ + "/" + name;
}

std::optional<CalibRecord> CalibCache::load(const CalibKey &key, std::string *why) const {
    std::string reason;
    if (why == nullptr) why = &reason;
    if (dir_.empty()) {
        *why = "no cache directory";
        return std::nullopt;
    }
    const std::string path = path_for(key);
    // the directory may be shared: a symlink is not followed, and a FIFO or
    // device planted under the entry's name neither blocks nor is read
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        *why = errno == ENOENT ? "no cache file"
               : errno == ELOOP ? "a symbolic link (not followed)"
                                : std::string("cannot open: ") + std::strerror(errno);
        GP_DEBUG("calibration cache %s: %s", path.c_str(), why->c_str());
        return std::nullopt;
    }
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        *why = "not a regular file";
        GP_DEBUG("calibration cache %s: %s", path.c_str(), why->c_str());
        return std::nullopt;
    }
    std::string text;
    char buf[8192];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > kMaxFile) break;
    }
    ::close(fd);
    if (text.size() > kMaxFile) {
        *why = "file too large";
        GP_DEBUG("calibration cache %s: %s", path.c_str(), why->c_str());
        return std::nullopt;
    }
    std::optional<CalibRecord> rec = parse_record(text, key, why);
    if (!rec) GP_DEBUG("calibration cache %s ignored: %s", path.c_str(), why->c_str());
    return rec;
}

bool CalibCache::store(const CalibKey &key, const CalibRecord &rec) const {
    if (dir_.empty()) {
        GP_WARN("calibration not cached: no cache directory (set XDG_CACHE_HOME or HOME)");
        return false;
    }
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
        GP_WARN("calibration not cached: cannot create %s: %s", dir_.c_str(), ec.message().c_str());
        return false;
    }
    const std::string path = path_for(key);
    const std::string text = serialize_record(key, rec);
    std::string tmp = path + ".tmp.XXXXXX";
    std::vector<char> tmpl(tmp.begin(), tmp.end());
    tmpl.push_back('\0');
    const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd < 0) {
        GP_WARN("calibration not cached: cannot create a file in %s: %s", dir_.c_str(), std::strerror(errno));
        return false;
    }
    tmp.assign(tmpl.data());
    bool ok = ::fchmod(fd, 0644) == 0;
    std::size_t off = 0;
    while (ok && off < text.size()) {
        const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ok = false;
            break;
        }
        off += static_cast<std::size_t>(n);
    }
    ok = ok && ::fsync(fd) == 0;
    const int saved = errno;
    ok = (::close(fd) == 0) && ok;
    if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
    if (!ok) {
        const int e = errno != 0 ? errno : saved;
        ::unlink(tmp.c_str());
        GP_WARN("calibration not cached: writing %s failed: %s", path.c_str(), std::strerror(e));
        return false;
    }
    // make the rename itself durable (best effort)
    const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)::fsync(dfd);
        ::close(dfd);
    }
    return true;
}

bool CalibCache::erase(const CalibKey &key) const {
    if (dir_.empty()) return true;
    const std::string path = path_for(key);
    return ::unlink(path.c_str()) == 0 || errno == ENOENT;
}

} // namespace gdrpipe::model
