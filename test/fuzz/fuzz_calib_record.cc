// Calibration cache files (model/calib_cache.hpp): text from a directory
// other processes (and users) can write. The key is read from the text, then
// the record parsed against it; a record that parses must serialize back to
// a text that parses to the same record.
#include "fuzz_target.hpp"

#include "calib_keys.hpp"
#include "gdrpipe/model/calib_cache.hpp"

#include <string>

using namespace gdrpipe::model;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    auto key = read_record_key(text);
    if (!key) return 0;
    std::string why;
    auto rec = parse_record(text, *key, &why);
    if (!rec) return 0;
    auto again = parse_record(serialize_record(*key, *rec), *key, &why);
    GP_FUZZ_ASSERT(again.has_value());
    GP_FUZZ_ASSERT(serialize_record(*key, *again) == serialize_record(*key, *rec));
    return 0;
}

std::vector<FuzzBytes> gp_fuzz_seeds() {
    const CalibKey k = gdrpipe::test::sample_calib_key();
    CalibRecord r;
    r.pipeline.chunk_bytes = 1 << 20;
    r.pipeline.depth = 4;
    r.tune_bytes = 8 << 20;
    r.pipeline_trials.push_back({{1 << 20, 4}, 1.5e-3, 5});
    r.pipeline_trials.push_back({{4 << 20, 2}, 1.7e-3, 5});
    r.elapsed_s = 0.4;
    r.budget_s = 0.5;
    r.probes = 120;
    r.date = "2026-11-30T12:00:00Z";
    const std::string a = serialize_record(k, r);
    CalibRecord plain;
    plain.date = "2026-01-01T00:00:00Z";
    const std::string b = serialize_record(k, plain);
    return {FuzzBytes(a.begin(), a.end()), FuzzBytes(b.begin(), b.end())};
}
