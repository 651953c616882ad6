// On-disk cache of calibrations: one small text file per endpoint pair.
//
// The file name is a 64-bit FNV-1a hash of the CalibKey; the file also holds
// every key field verbatim and a checksum of its contents, and is ignored if
// a field differs (hash collision, other driver...) or the checksum fails.
// Files are written to a temporary file in the same directory, fsync()ed and
// rename()d, so concurrent readers see the old file or the new one, never a
// torn one. An unusable directory is a warning, never an error.
#pragma once
#include "gdrpipe/model/calib_record.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace gdrpipe::model {

struct CalibKey {
    std::string local_gpu_uuid;
    std::string remote_gpu_uuid;
    std::string local_pci_bus_id;
    std::string remote_pci_bus_id;
    std::string peer_relation;   // e.g. "nvlink:18", "pcie-p2p", "none"
    std::string wire_kind;       // e.g. "cuda_ipc", "rc_mlx5"
    std::string driver_version;  // e.g. "580.159.04"
    std::string gdrpipe_version; // e.g. "0.1.0"
    bool operator==(const CalibKey &) const = default;
};

std::uint64_t key_hash(const CalibKey &key) noexcept;

// Text form of a record (the cache file's contents, checksum line included).
std::string serialize_record(const CalibKey &key, const CalibRecord &rec);
// Parses serialize_record()'s output; nullopt (with *why) if the format,
// checksum or any key field does not match `expect`.
std::optional<CalibRecord> parse_record(const std::string &text, const CalibKey &expect,
                                        std::string *why = nullptr);

// The key a cache file's text names (its key.* lines), to parse a file whose
// key is not known beforehand (gdrpipe-calibrate --show); nullopt if the text
// does not start like a cache file. parse_record() still checks the rest.
std::optional<CalibKey> read_record_key(const std::string &text);

class CalibCache {
public:
    // dir == "": default_dir(). The directory is created on the first store().
    explicit CalibCache(std::string dir = {});

    // $XDG_CACHE_HOME/gdrpipe if XDG_CACHE_HOME is an absolute path, else
    // $HOME/.cache/gdrpipe; "" when neither is set (caching disabled).
    static std::string default_dir();

    const std::string &dir() const noexcept { return dir_; }
    // <dir>/crossover-<16 hex digits>.txt
    std::string path_for(const CalibKey &key) const;

    // nullopt if missing, unreadable, stale or corrupt (reason in *why, logged at debug).
    std::optional<CalibRecord> load(const CalibKey &key, std::string *why = nullptr) const;
    // false (with a GP_WARN) if the file could not be written; never throws.
    bool store(const CalibKey &key, const CalibRecord &rec) const;
    // Removes the file for `key` if present; true if nothing is left.
    bool erase(const CalibKey &key) const;

private:
    std::string dir_;
};

} // namespace gdrpipe::model
