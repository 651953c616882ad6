#include "gdrpipe/model/shared_obtain.hpp"

#include "gdrpipe/log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

namespace gdrpipe::model {
namespace {

double file_mtime(const std::string &path) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) return -1.0;
    return static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
}

// Cache entry usable under `shared`'s rules.
std::optional<CalibRecord> usable_entry(const CalibKey &key, const CalibCache *cache,
                                        const SharedOptions &shared) {
    if (cache == nullptr || cache->dir().empty()) return std::nullopt;
    if (shared.mode == CalibMode::force) {
        const double t = file_mtime(cache->path_for(key));
        if (t < 0.0 || t < shared.fresh_after) return std::nullopt;
    }
    return cache->load(key);
}

class LockFile {
public:
    ~LockFile() {
        if (fd_ >= 0) ::close(fd_); // releases the flock
    }
    // false (with a warning) when the file cannot be opened
    bool open(const std::string &dir, const std::string &name) {
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        const std::string path = dir + "/" + name;
        // the directory may be shared: no symlink is followed (nothing is
        // created through one), and only a regular file serves as the lock
        const int flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | flags, 0644);
        if (fd_ < 0 && errno != ELOOP) fd_ = ::open(path.c_str(), O_RDONLY | flags); // flock works read-only too
        if (fd_ < 0) {
            GP_WARN("calibration lock %s: %s: calibrating without it", path.c_str(), std::strerror(errno));
            return false;
        }
        struct stat st{};
        if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
            GP_WARN("calibration lock %s: not a regular file: calibrating without it", path.c_str());
            ::close(fd_);
            fd_ = -1;
            return false;
        }
        return true;
    }
    bool try_lock() {
        for (;;) {
            if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
            if (errno != EINTR) return false;
        }
    }

private:
    int fd_ = -1;
};

SharedObtained from_cache(CalibRecord rec) {
    SharedObtained out;
    out.status = CalibStatus::ok;
    out.source = Source::cache;
    out.record = std::move(rec);
    return out;
}

} // namespace

const char *calib_mode_name(CalibMode m) noexcept {
    switch (m) {
    case CalibMode::automatic: return "auto";
    case CalibMode::force: return "force";
    case CalibMode::off: return "off";
    }
    return "?";
}

double wall_clock_now() noexcept {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string pair_lock_name(const std::string &endpoint_a, const std::string &endpoint_b) {
    const std::string &lo = endpoint_a < endpoint_b ? endpoint_a : endpoint_b;
    const std::string &hi = endpoint_a < endpoint_b ? endpoint_b : endpoint_a;
    CalibKey k;
    k.local_gpu_uuid = lo;
    k.remote_gpu_uuid = hi;
    char name[48];
    std::snprintf(name, sizeof(name), "calibrate-%016" PRIx64 ".lock", key_hash(k));
    return name;
}

SharedObtained obtain_shared(const CalibKey &key, const ProberFactory &make_prober,
                             const CalibOptions &options, const CalibCache *cache,
                             const SharedOptions &shared) {
    if (cache != nullptr && cache->dir().empty()) cache = nullptr;
    if (std::optional<CalibRecord> rec = usable_entry(key, cache, shared)) return from_cache(std::move(*rec));
    SharedObtained out;
    if (shared.mode == CalibMode::off) {
        out.status = CalibStatus::no_data;
        out.message = "calibration is off and nothing is cached";
        return out;
    }
    LockFile lock;
    if (cache != nullptr) {
        std::string name = shared.lock_name;
        if (name.empty()) {
            name = cache->path_for(key);
            name = name.substr(name.rfind('/') + 1);
            name.replace(name.size() - 4, 4, ".lock");
        }
        if (lock.open(cache->dir(), name)) {
            out.locked = true;
            const auto t0 = std::chrono::steady_clock::now();
            auto waited = [&] {
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            };
            bool have = lock.try_lock();
            while (!have && waited() < shared.wait_s) {
                std::this_thread::sleep_for(std::chrono::duration<double>(shared.poll_s));
                have = lock.try_lock();
            }
            out.waited_s = waited();
            // the holder before us (or, past the wait limit, the holder now)
            // may have stored it
            if (std::optional<CalibRecord> rec = usable_entry(key, cache, shared)) {
                SharedObtained c = from_cache(std::move(*rec));
                c.waited_s = out.waited_s;
                c.locked = true;
                return c;
            }
            if (!have) {
                out.status = CalibStatus::no_data;
                out.lock_timed_out = true;
                out.message = "another process has been calibrating for longer than the wait limit";
                return out;
            }
        }
    }
    std::string err;
    std::unique_ptr<Prober> prober = make_prober(&err);
    if (!prober) {
        out.status = CalibStatus::no_path;
        out.message = "cannot set up the measurement: " + err;
        return out;
    }
    Obtained got = obtain_calibration(key, *prober, options, cache, /*force=*/true);
    static_cast<Obtained &>(out) = std::move(got);
    return out; // the lock is released here, after the store
}

} // namespace gdrpipe::model
