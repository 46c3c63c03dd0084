// The JSON form of a run's numerics summary (numerics_summary.h): what `mixlab-cli
// numerics --json` prints, the same numbers as its table, shares as fractions.
#include "mixlab/numerics_summary.h"

#include <nlohmann/json.hpp>

namespace mixlab {

namespace {

using Json = nlohmann::ordered_json;

Json optional_share(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json kind_to_json(const KindSummary& k)
{
    Json j;
    j["values"] = k.values;
    j["range99"] = k.range99 ? Json{{"lo", k.range99->lo}, {"hi", k.range99->hi}} : Json(nullptr);
    j["zero"] = k.zero;
    j["non_finite"] = k.non_finite;
    Json formats = Json::object();
    for (std::size_t i = 0; i < std::size(k_number_formats); ++i) {
        const FormatShares& f = k.formats[i];
        formats[std::string(format_limits(k_number_formats[i]).name)] = {
            {"overflow", f.overflow}, {"subnormal", f.subnormal}, {"flush", f.flush}};
    }
    j["formats"] = std::move(formats);
    return j;
}

void put_kind(Json& j, const char* key, const std::optional<KindSummary>& k)
{
    if (k) j[key] = kind_to_json(*k);
}

} // namespace

nlohmann::ordered_json numerics_summary_to_json(const NumericsSummary& s)
{
    Json j;
    j["samples"] = s.samples;
    j["first_step"] = s.first_step;
    j["last_step"] = s.last_step;
    j["min_loss_scale"] = s.min_scale;
    j["max_loss_scale"] = s.max_scale;
    j["power_of_two_scales"] = s.power_of_two_scales;
    Json layers = Json::array();
    for (const LayerNumericsSummary& l : s.layers) {
        Json lj;
        lj["path"] = l.path;
        lj["type"] = l.type;
        put_kind(lj, "weights", l.weights);
        put_kind(lj, "activations", l.activations);
        put_kind(lj, "gradients", l.gradients);
        put_kind(lj, "gradients_scaled", l.gradients_scaled);
        if (l.lost.front()) {
            Json lost = Json::object();
            for (std::size_t i = 0; i < std::size(k_number_formats); ++i)
                lost[std::string(format_limits(k_number_formats[i]).name)] =
                    optional_share(l.lost[i]);
            lj["lost_updates"] = std::move(lost);
            Json by_step = Json::array();
            for (const auto& [step, share] : l.lost_fp16_by_step)
                by_step.push_back({{"step", step}, {"fp16", share}});
            lj["lost_updates_fp16_by_step"] = std::move(by_step);
        }
        layers.push_back(std::move(lj));
    }
    j["layers"] = std::move(layers);
    put_kind(j, "gradients", s.gradients);
    put_kind(j, "gradients_scaled", s.gradients_scaled);
    return j;
}

} // namespace mixlab
