#include "gdrpipe/model/obtain.hpp"

#include "gdrpipe/log.hpp"

namespace gdrpipe::model {

Obtained obtain_calibration(const CalibKey &key, Prober &prober, const CalibOptions &options,
                            const CalibCache *cache, bool force) {
    Obtained out;
    if (cache != nullptr && !force) {
        std::string why;
        if (std::optional<CalibRecord> rec = cache->load(key, &why)) {
            out.status = CalibStatus::ok;
            out.source = Source::cache;
            out.record = std::move(*rec);
            return out;
        }
        GP_DEBUG("no usable cached calibration (%s): measuring", why.c_str());
    }
    CalibResult r = calibrate(prober, options);
    out.status = r.status;
    out.message = r.message;
    out.source = Source::measured;
    if (r.status != CalibStatus::ok) return out;
    out.record = std::move(r.record);
    if (cache != nullptr) out.stored = cache->store(key, out.record);
    return out;
}

} // namespace gdrpipe::model
