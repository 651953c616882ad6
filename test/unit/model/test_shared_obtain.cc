// obtain_shared(): one process calibrates under the pair's lock file, the
// others wait (bounded) and read its result; failures store nothing.
#include "fake_prober.hpp"

#include "gdrpipe/model/shared_obtain.hpp"

#include "calib_keys.hpp"
#include "temp_dir.hpp"

#include "gp_catch.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

using namespace gdrpipe::model;
namespace fs = std::filesystem;

namespace {

using gdrpipe::test::TempDir;

CalibKey key_of(const char *local, const char *remote) {
    CalibKey k = gdrpipe::test::sample_calib_key(local, remote);
    k.peer_relation = "p2p";
    k.wire_kind = "intra-host";
    k.driver_version = "13000";
    k.gdrpipe_version = "test";
    return k;
}
const CalibKey kKey = key_of("GPU-aaaa", "GPU-bbbb");

// A fake prober with its own fake clock; counts the factory calls. `delay`
// makes the factory itself take real time (a slow measurement to wait for).
struct Factory {
    int made = 0;
    bool fail_create = false;
    bool paths_fail = false;
    double delay_s = 0.0;
    fake::FakeProber *last = nullptr;
    ProberFactory fn() {
        return [this](std::string *err) -> std::unique_ptr<Prober> {
            ++made;
            if (delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay_s));
            if (fail_create) {
                *err = "no devices";
                return nullptr;
            }
            fake::FakePath d = fake::pcie_peer_direct(), s = fake::pcie_staged();
            if (paths_fail) d.available = s.available = false;
            auto p = std::make_unique<fake::FakeProber>(d, s, 7, 0.0, 0.0);
            last = p.get();
            return p;
        };
    }
};

// Calibration options on a clock that only the fake prober advances.
struct FakeTime {
    double now = 0;
    CalibOptions opts() {
        CalibOptions o;
        o.budget_s = 1e9; // the fake prober's clock is not this one
        o.clock = [this] { return now += 1e-4; };
        return o;
    }
};

// Holds the lock file in a child process for `hold_s`, optionally storing an
// entry for kKey first. Returns the child's pid once the lock is held.
pid_t hold_lock(const std::string &dir, const std::string &name, double hold_s, bool store) {
    int pipefd[2];
    REQUIRE(::pipe(pipefd) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(pipefd[0]);
        fs::create_directories(dir);
        const int fd = ::open((dir + "/" + name).c_str(), O_RDWR | O_CREAT, 0644);
        if (fd < 0 || ::flock(fd, LOCK_EX) != 0) ::_exit(2);
        (void)!::write(pipefd[1], "x", 1);
        std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
        if (store) {
            fake::FakeProber fp(fake::pcie_peer_direct(), fake::pcie_staged(), 3, 0.0, 0.0);
            CalibOptions o;
            o.clock = fp.clock();
            o.budget_s = 5;
            CalibResult r = calibrate(fp, o);
            if (r.status != CalibStatus::ok || !CalibCache(dir).store(kKey, r.record)) ::_exit(3);
        }
        ::_exit(0);
    }
    ::close(pipefd[1]);
    char c;
    REQUIRE(::read(pipefd[0], &c, 1) == 1);
    ::close(pipefd[0]);
    return pid;
}

int wait_child(pid_t pid) {
    int st = 0;
    REQUIRE(::waitpid(pid, &st, 0) == pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

} // namespace

TEST_CASE("shared obtain: measures once, then reads the cache without the prober", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    REQUIRE(a.status == CalibStatus::ok);
    CHECK(a.source == Source::measured);
    CHECK(a.stored);
    CHECK(a.locked);
    CHECK(f.made == 1);
    CHECK(fs::exists(cache.path_for(kKey)));
    SharedObtained b = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    REQUIRE(b.status == CalibStatus::ok);
    CHECK(b.source == Source::cache);
    CHECK(f.made == 1);
    CHECK(b.record == a.record);
}

TEST_CASE("shared obtain: off uses the cache only", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    so.mode = CalibMode::off;
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(a.status == CalibStatus::no_data);
    CHECK(f.made == 0);
    CHECK_FALSE(fs::exists(cache.path_for(kKey)));
    so.mode = CalibMode::automatic;
    REQUIRE(obtain_shared(kKey, f.fn(), ft.opts(), &cache, so).status == CalibStatus::ok);
    so.mode = CalibMode::off;
    SharedObtained c = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(c.status == CalibStatus::ok);
    CHECK(c.source == Source::cache);
    CHECK(f.made == 1);
}

TEST_CASE("shared obtain: force ignores entries older than fresh_after", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    REQUIRE(obtain_shared(kKey, f.fn(), ft.opts(), &cache, so).status == CalibStatus::ok);
    REQUIRE(f.made == 1);
    so.mode = CalibMode::force;
    so.fresh_after = wall_clock_now() + 1.0; // the entry is older than "this run"
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(a.status == CalibStatus::ok);
    CHECK(a.source == Source::measured);
    CHECK(f.made == 2);
    so.fresh_after = wall_clock_now() - 60.0; // written during "this run": reused
    SharedObtained b = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(b.source == Source::cache);
    CHECK(f.made == 2);
}

TEST_CASE("shared obtain: a failed calibration stores nothing", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    FakeTime ft;
    SharedOptions so;
    SECTION("prober cannot be made") {
        Factory f;
        f.fail_create = true;
        SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
        CHECK(a.status == CalibStatus::no_path);
        CHECK(a.message.find("no devices") != std::string::npos);
    }
    SECTION("every probe fails") {
        Factory f;
        f.paths_fail = true;
        SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
        CHECK(a.status == CalibStatus::no_path);
        CHECK(f.made == 1);
    }
    SECTION("cancelled") {
        Factory f;
        std::atomic<bool> cancel{true};
        CalibOptions o = ft.opts();
        o.cancel = &cancel;
        SharedObtained a = obtain_shared(kKey, f.fn(), o, &cache, so);
        CHECK(a.status == CalibStatus::cancelled);
    }
    CHECK_FALSE(fs::exists(cache.path_for(kKey)));
    // and the lock was released: another attempt measures at once
    Factory g;
    SharedObtained b = obtain_shared(kKey, g.fn(), ft.opts(), &cache, so);
    CHECK(b.status == CalibStatus::ok);
    CHECK(b.waited_s < 1.0);
}

TEST_CASE("shared obtain: waits for the lock holder and reads what it stored", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    so.lock_name = pair_lock_name("GPU-aaaa", "GPU-bbbb");
    so.wait_s = 10.0;
    const pid_t child = hold_lock(td.path, so.lock_name, 0.3, /*store=*/true);
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(wait_child(child) == 0);
    REQUIRE(a.status == CalibStatus::ok);
    CHECK(a.source == Source::cache);
    CHECK(f.made == 0); // it waited for the holder and read what it stored
    CHECK(a.waited_s < 5.0);
}

TEST_CASE("shared obtain: the holder stored nothing: measure after it", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    so.lock_name = "x.lock";
    const pid_t child = hold_lock(td.path, so.lock_name, 0.2, /*store=*/false);
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(wait_child(child) == 0);
    REQUIRE(a.status == CalibStatus::ok);
    CHECK(a.source == Source::measured);
    CHECK(f.made == 1);
}

TEST_CASE("shared obtain: bounded wait, then fall back without measuring", "[model][shared]") {
    TempDir td;
    CalibCache cache(td.path);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    so.lock_name = "x.lock";
    so.wait_s = 0.2;
    const pid_t child = hold_lock(td.path, so.lock_name, 1.5, /*store=*/false);
    const auto t0 = std::chrono::steady_clock::now();
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(a.status == CalibStatus::no_data);
    CHECK(a.lock_timed_out);
    CHECK(f.made == 0);
    CHECK(took >= 0.2);
    CHECK(took < 1.2);
    CHECK_FALSE(fs::exists(cache.path_for(kKey)));
    CHECK(wait_child(child) == 0);
}

TEST_CASE("shared obtain: an unusable cache directory still calibrates", "[model][shared]") {
    TempDir td;
    const std::string file = td.path + "/not-a-dir";
    { std::FILE *fp = std::fopen(file.c_str(), "w"); REQUIRE(fp != nullptr); std::fclose(fp); }
    CalibCache cache(file + "/sub");
    Factory f;
    FakeTime ft;
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, SharedOptions{});
    CHECK(a.status == CalibStatus::ok);
    CHECK(a.source == Source::measured);
    CHECK_FALSE(a.stored);
    CHECK_FALSE(a.locked);
    SharedObtained none = obtain_shared(kKey, f.fn(), ft.opts(), nullptr, SharedOptions{});
    CHECK(none.status == CalibStatus::ok);
    CHECK(f.made == 2);
}

TEST_CASE("shared obtain: many processes at once, one measures", "[model][shared]") {
    TempDir td;
    const int n = 6;
    std::vector<pid_t> kids;
    for (int i = 0; i < n; ++i) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            CalibCache cache(td.path);
            Factory f;
            f.delay_s = 0.3; // measuring takes a while: the others must wait
            FakeTime ft;
            SharedOptions so;
            so.lock_name = pair_lock_name(kKey.remote_gpu_uuid, kKey.local_gpu_uuid);
            so.wait_s = 20;
            SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
            if (a.status != CalibStatus::ok) ::_exit(1);
            ::_exit(a.source == Source::measured ? 10 : 11);
        }
        kids.push_back(pid);
    }
    int measured = 0, cached = 0;
    for (pid_t k : kids) {
        const int rc = wait_child(k);
        measured += rc == 10;
        cached += rc == 11;
    }
    CHECK(measured == 1);
    CHECK(cached == n - 1);
}

TEST_CASE("pair lock name does not depend on the direction", "[model][shared]") {
    CHECK(pair_lock_name("GPU-a", "GPU-b") == pair_lock_name("GPU-b", "GPU-a"));
    CHECK(pair_lock_name("GPU-a", "GPU-b") != pair_lock_name("GPU-a", "GPU-c"));
    CHECK(pair_lock_name("GPU-a", "GPU-b").find(".lock") != std::string::npos);
}

TEST_CASE("shared obtain: a symlink planted as the lock file is not followed", "[model][shared][security]") {
    TempDir td, other;
    CalibCache cache(td.path);
    std::string lock = cache.path_for(kKey);
    lock.replace(lock.size() - 4, 4, ".lock");
    const std::string target = other.path + "/created-through-the-link";
    fs::create_symlink(target, lock);
    Factory f;
    FakeTime ft;
    SharedOptions so;
    SharedObtained a = obtain_shared(kKey, f.fn(), ft.opts(), &cache, so);
    CHECK(a.status == CalibStatus::ok);
    CHECK_FALSE(a.locked); // calibrated without the lock
    CHECK_FALSE(fs::exists(target));
}
