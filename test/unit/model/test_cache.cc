// On-disk calibration cache: round trip, stale/corrupt files, concurrency.
#include "fake_prober.hpp"

#include "gdrpipe/log.hpp"
#include "gdrpipe/model/calib_cache.hpp"
#include "gdrpipe/model/obtain.hpp"

#include "calib_keys.hpp"
#include "temp_dir.hpp"

#include "gp_catch.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace gdrpipe::model;
namespace fs = std::filesystem;

namespace {

using gdrpipe::test::TempDir;

CalibKey key_a() { return gdrpipe::test::sample_calib_key(); }

CalibRecord sample_record(std::uint64_t seed = 1) {
    fake::FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), seed);
    CalibOptions o;
    o.clock = fp.clock();
    o.budget_s = 2.0;
    CalibResult r = calibrate(fp, o);
    REQUIRE(r.status == CalibStatus::ok);
    return r.record;
}

std::string read_all(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_all(const std::string &p, const std::string &s) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << s;
}

std::vector<std::string> warnings;
void capture(gdrpipe::LogLevel level, const char *, int, const char *msg) {
    if (level == gdrpipe::LogLevel::warn) warnings.emplace_back(msg);
}

} // namespace

TEST_CASE("cache round trip keeps every field", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    CalibRecord rec = sample_record();
    // a check through the peer in two size classes (pipeline/online_check.hpp)
    rec.online = {{16384, 8, 5.25e-6, 1.5e-5}, {1048576, 8, -2e-6, 1.25e-6}};
    CHECK_FALSE(cache.load(key_a()).has_value());
    REQUIRE(cache.store(key_a(), rec));
    std::string why;
    const std::optional<CalibRecord> back = cache.load(key_a(), &why);
    INFO(why);
    REQUIRE(back.has_value());
    CHECK(*back == rec);
    CHECK(back->model.threshold() == rec.model.threshold());
    CHECK(back->model.choose(12345) == rec.model.choose(12345));
    // the file is small text holding the full key and a checksum
    const std::string text = read_all(cache.path_for(key_a()));
    CHECK(text.size() < 16384);
    CHECK(text.find("key.driver_version 580.159.04") != std::string::npos);
    CHECK(text.find("\nonline 16384 8 ") != std::string::npos);
    CHECK(text.rfind("checksum ") != std::string::npos);
    // no temporary files are left behind
    int files = 0;
    for (const auto &e : fs::directory_iterator(d.path)) {
        (void)e;
        ++files;
    }
    CHECK(files == 1);
    CHECK(cache.erase(key_a()));
    CHECK_FALSE(cache.load(key_a()).has_value());
}

TEST_CASE("infinite thresholds, missing paths and odd key text survive", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    CalibRecord rec;
    std::vector<MeasuredPoint> t = {{1, std::nullopt, 1e-5}, {1024, std::nullopt, 1.2e-5}};
    rec.model = CostModel::fit(t, PipelineParams{});
    rec.date = "2026-11-30T12:00:00Z";
    CalibKey k = key_a();
    k.peer_relation = "pcie p2p % 100\nweird";
    k.wire_kind = "";
    REQUIRE(cache.store(k, rec));
    const std::optional<CalibRecord> back = cache.load(k);
    REQUIRE(back.has_value());
    CHECK(*back == rec);
    CalibRecord never;
    never.model = CostModel::fixed(kNever);
    REQUIRE(cache.store(key_a(), never));
    REQUIRE(cache.load(key_a()).has_value());
    CHECK(cache.load(key_a())->model.threshold() == kNever);
}

TEST_CASE("a file's key can be read before its record is parsed", "[model][cache]") {
    CalibKey k = key_a();
    k.peer_relation = "pcie p2p % 100\nweird"; // escaped in the file
    k.wire_kind = "";
    // one record: each calibration stamps its date, and two of them can fall
    // in different seconds
    const CalibRecord rec = sample_record();
    const std::string text = serialize_record(k, rec);
    const std::optional<CalibKey> got = read_record_key(text);
    REQUIRE(got.has_value());
    CHECK(*got == k);
    REQUIRE(parse_record(text, *got).has_value());
    CHECK(*parse_record(text, *got) == rec);
    CHECK_FALSE(read_record_key("").has_value());
    CHECK_FALSE(read_record_key("hello\n").has_value());
    // the key lines cut short, or one renamed
    CHECK_FALSE(read_record_key(text.substr(0, text.find("key.wire_kind"))).has_value());
    std::string renamed = text;
    renamed.replace(renamed.find("key.driver_version"), 18, "key.driver_versio_");
    CHECK_FALSE(read_record_key(renamed).has_value());
}

TEST_CASE("a file for another key is ignored", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    REQUIRE(cache.store(key_a(), sample_record()));
    CalibKey other = key_a();
    other.driver_version = "590.1.2";
    CHECK(key_hash(other) != key_hash(key_a()));
    CHECK(cache.path_for(other) != cache.path_for(key_a()));
    CHECK_FALSE(cache.load(other).has_value());
    // even when it sits at the other key's path (a hash collision)
    fs::copy_file(cache.path_for(key_a()), cache.path_for(other));
    std::string why;
    CHECK_FALSE(cache.load(other, &why).has_value());
    CHECK(why.find("driver_version") != std::string::npos);
    // every field of the key counts
    CalibKey swapped = key_a();
    std::swap(swapped.local_gpu_uuid, swapped.remote_gpu_uuid);
    CHECK(key_hash(swapped) != key_hash(key_a()));
}

TEST_CASE("corrupt and truncated files are ignored, then rewritten", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    const CalibRecord rec = sample_record();
    REQUIRE(cache.store(key_a(), rec));
    const std::string path = cache.path_for(key_a());
    const std::string good = read_all(path);

    SECTION("one changed digit") {
        std::string bad = good;
        const std::size_t at = bad.find("threshold ") + 10;
        bad[at] = bad[at] == '9' ? '8' : '9';
        write_all(path, bad);
        std::string why;
        CHECK_FALSE(cache.load(key_a(), &why).has_value());
        CHECK(why == "checksum mismatch");
    }
    SECTION("truncated") {
        for (std::size_t len : {std::size_t{0}, std::size_t{10}, good.size() / 2, good.size() - 1}) {
            write_all(path, good.substr(0, len));
            CHECK_FALSE(cache.load(key_a()).has_value());
        }
    }
    SECTION("garbage") {
        write_all(path, "hello\nchecksum 0000000000000000\n");
        CHECK_FALSE(cache.load(key_a()).has_value());
    }
    // obtain() recalibrates and replaces the bad file
    fake::FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 3);
    CalibOptions o;
    o.clock = fp.clock();
    o.budget_s = 2.0;
    const Obtained got = obtain_calibration(key_a(), fp, o, &cache, false);
    REQUIRE(got.status == CalibStatus::ok);
    CHECK(got.source == Source::measured);
    CHECK(got.stored);
    CHECK(fp.probes > 0);
    REQUIRE(cache.load(key_a()).has_value());
    CHECK(*cache.load(key_a()) == got.record);
}

TEST_CASE("obtain uses the cache unless forced; cancelled runs store nothing", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    fake::FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 12);
    CalibOptions o;
    o.clock = fp.clock();
    o.budget_s = 2.0;

    std::atomic<bool> stop{true};
    CalibOptions oc = o;
    oc.cancel = &stop;
    const Obtained c = obtain_calibration(key_a(), fp, oc, &cache, false);
    CHECK(c.status == CalibStatus::cancelled);
    CHECK_FALSE(c.stored);
    CHECK_FALSE(fs::exists(cache.path_for(key_a())));

    const Obtained first = obtain_calibration(key_a(), fp, o, &cache, false);
    REQUIRE(first.status == CalibStatus::ok);
    CHECK(first.source == Source::measured);
    const std::size_t probes = fp.probes;
    const Obtained second = obtain_calibration(key_a(), fp, o, &cache, false);
    REQUIRE(second.status == CalibStatus::ok);
    CHECK(second.source == Source::cache);
    CHECK(fp.probes == probes); // nothing measured
    CHECK(second.record == first.record);
    const Obtained forced = obtain_calibration(key_a(), fp, o, &cache, true);
    REQUIRE(forced.status == CalibStatus::ok);
    CHECK(forced.source == Source::measured);
    CHECK(fp.probes > probes);
    const Obtained nocache = obtain_calibration(key_a(), fp, o, nullptr, false);
    CHECK(nocache.source == Source::measured);
    CHECK_FALSE(nocache.stored);
}

TEST_CASE("concurrent writers never leave a torn file", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    std::vector<CalibRecord> recs;
    for (int i = 0; i < 8; ++i) {
        CalibRecord r;
        r.model = CostModel::fixed(std::size_t{1000} + static_cast<std::size_t>(i));
        r.date = "writer-" + std::to_string(i);
        r.pipeline_trials.resize(static_cast<std::size_t>(50 + i * 20)); // different lengths
        recs.push_back(r);
    }
    std::vector<pid_t> kids;
    for (int i = 0; i < 8; ++i) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int bad = 0;
            for (int j = 0; j < 40; ++j) {
                if (!cache.store(key_a(), recs[static_cast<std::size_t>(i)])) bad |= 1;
                // a reader in the middle of the storm sees a whole file or none
                if (fs::exists(cache.path_for(key_a())) && !cache.load(key_a()).has_value()) bad |= 2;
            }
            ::_exit(bad);
        }
        kids.push_back(pid);
    }
    for (pid_t pid : kids) {
        int st = 0;
        REQUIRE(::waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st));
        CHECK(WEXITSTATUS(st) == 0);
    }
    const std::optional<CalibRecord> got = cache.load(key_a());
    REQUIRE(got.has_value());
    bool matches_one = false;
    for (const CalibRecord &r : recs) matches_one = matches_one || (*got == r);
    CHECK(matches_one);
    int files = 0;
    for (const auto &e : fs::directory_iterator(d.path)) {
        (void)e;
        ++files;
    }
    CHECK(files == 1); // no temporary files left
}

TEST_CASE("an unwritable location is a warning, not a failure", "[model][cache]") {
    TempDir d;
    const std::string blocker = d.path + "/not-a-dir";
    write_all(blocker, "x");
    const CalibCache cache(blocker + "/sub");
    warnings.clear();
    gdrpipe::set_log_sink(&capture, gdrpipe::LogLevel::warn);
    const bool ok = cache.store(key_a(), CalibRecord{});
    const std::optional<CalibRecord> got = cache.load(key_a());
    gdrpipe::set_log_sink(nullptr, gdrpipe::LogLevel::warn);
    CHECK_FALSE(ok);
    CHECK_FALSE(got.has_value());
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("not cached") != std::string::npos);

    // obtain() still returns the fresh measurement
    fake::FakeProber fp(fake::nvlink_direct(), fake::pcie_staged(), 2);
    CalibOptions o;
    o.clock = fp.clock();
    o.budget_s = 2.0;
    gdrpipe::set_log_sink(&capture, gdrpipe::LogLevel::warn);
    const Obtained r = obtain_calibration(key_a(), fp, o, &cache, false);
    gdrpipe::set_log_sink(nullptr, gdrpipe::LogLevel::warn);
    CHECK(r.status == CalibStatus::ok);
    CHECK_FALSE(r.stored);
}

TEST_CASE("default cache directory follows XDG_CACHE_HOME, then HOME", "[model][cache]") {
    const char *old_xdg = std::getenv("XDG_CACHE_HOME");
    const char *old_home = std::getenv("HOME");
    const std::string sx = old_xdg ? old_xdg : "", sh = old_home ? old_home : "";
    ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
    ::setenv("HOME", "/home/u", 1);
    CHECK(CalibCache::default_dir() == "/x/cache/gdrpipe");
    CHECK(CalibCache().dir() == "/x/cache/gdrpipe");
    ::setenv("XDG_CACHE_HOME", "relative", 1); // not absolute: ignored, as the XDG spec says
    CHECK(CalibCache::default_dir() == "/home/u/.cache/gdrpipe");
    ::unsetenv("XDG_CACHE_HOME");
    CHECK(CalibCache::default_dir() == "/home/u/.cache/gdrpipe");
    ::unsetenv("HOME");
    CHECK(CalibCache::default_dir().empty());
    if (old_xdg) ::setenv("XDG_CACHE_HOME", sx.c_str(), 1);
    if (old_home) ::setenv("HOME", sh.c_str(), 1);
}

TEST_CASE("an inverted rule (staged below) survives the cache", "[model][cache]") {
    TempDir d;
    const CalibCache cache(d.path);
    CalibRecord rec;
    std::vector<MeasuredPoint> t;
    for (std::size_t n = 1; n <= (std::size_t{64} << 20); n *= 4)
        t.push_back({n, 60e-6 + static_cast<double>(n) / 40e9, 5e-6 + static_cast<double>(n) / 12e9});
    rec.model = CostModel::fit(t, PipelineParams{});
    rec.date = "2026-11-30T12:00:00Z";
    REQUIRE(rec.model.below() == Path::staged);
    REQUIRE(cache.store(key_a(), rec));
    const std::string text = read_all(cache.path_for(key_a()));
    CHECK(text.find("below staged\n") != std::string::npos);
    CHECK(text.find("kind staged-below\n") != std::string::npos);
    const std::optional<CalibRecord> back = cache.load(key_a());
    REQUIRE(back.has_value());
    CHECK(*back == rec);
    CHECK(back->model.choose(1) == Path::staged);
    CHECK(back->model.choose(std::size_t{64} << 20) == Path::direct);
}

// The cache directory may be shared (UCX_GDRPIPE_CALIB_DIR): a file planted
// under an entry's name must neither block the process nor redirect it.
TEST_CASE("cache load: a FIFO planted as an entry does not block", "[model][cache][security]") {
    TempDir d;
    const CalibCache cache(d.path);
    REQUIRE(::mkfifo(cache.path_for(key_a()).c_str(), 0600) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(cache.load(key_a()).has_value() ? 1 : 0);
    int st = 0;
    bool exited = false;
    for (int i = 0; i < 500 && !exited; ++i) {
        exited = ::waitpid(pid, &st, WNOHANG) == pid;
        if (!exited) ::usleep(10000);
    }
    if (!exited) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
    }
    CHECK(exited); // within 5 s
    CHECK((exited && WIFEXITED(st) && WEXITSTATUS(st) == 0));
}

TEST_CASE("cache load: a symlink planted as an entry is not followed", "[model][cache][security]") {
    TempDir d, other;
    const CalibCache cache(d.path), elsewhere(other.path);
    REQUIRE(elsewhere.store(key_a(), sample_record()));
    REQUIRE(elsewhere.load(key_a()).has_value());
    fs::create_symlink(elsewhere.path_for(key_a()), cache.path_for(key_a()));
    std::string why;
    CHECK_FALSE(cache.load(key_a(), &why).has_value());
    INFO(why);
}
