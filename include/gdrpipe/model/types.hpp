// Basic vocabulary of the crossover model: the two ways gdrpipe moves GPU
// memory, the staged pipeline's shape, and one measured row of a size sweep.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

namespace gdrpipe::model {

// direct: the peer GPU / NIC reads the buffer itself (IPC mapping, GPUDirect).
// staged: device->host bounce buffers, pipelined with the wire and host->device.
enum class Path : int { direct = 0, staged = 1 };

const char *path_name(Path p) noexcept;

// Shape of the host-staged pipeline: bytes per chunk and chunks in flight.
struct PipelineParams {
    std::size_t chunk_bytes = std::size_t{2} << 20;
    int depth = 4;
    bool operator==(const PipelineParams &) const = default;
};

// Threshold value meaning "never switch to staged" (direct always wins).
inline constexpr std::size_t kNever = std::numeric_limits<std::size_t>::max();

// One size of a sweep: robust (outlier-rejected median) time of each path in
// seconds; nullopt = the path failed / is unavailable at that size.
struct MeasuredPoint {
    std::size_t bytes = 0;
    std::optional<double> direct_s;
    std::optional<double> staged_s;

    std::optional<double> time(Path p) const noexcept {
        return p == Path::direct ? direct_s : staged_s;
    }
    bool operator==(const MeasuredPoint &) const = default;
};

// Where the threshold in use came from (printed by the report).
enum class Source : int { measured = 0, cache, configured };

const char *source_name(Source s) noexcept;

} // namespace gdrpipe::model
