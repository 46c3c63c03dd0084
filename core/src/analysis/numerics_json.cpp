// The JSON form of a numerics sample (numerics.h): histograms trimmed to their non-zero
// bins, so a sample of a ten-layer model stays a few kilobytes.
#include "mixlab/numerics.h"

#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

namespace mixlab {

namespace {

using Json = nlohmann::ordered_json;

// {"<lo_key>": first non-zero bin's value, "counts": [...to the last non-zero bin]}.
template <std::size_t N>
void trimmed(Json& j, const char* lo_key, int lo_value, const std::array<std::uint64_t, N>& bins)
{
    std::size_t first = N, last = 0;
    for (std::size_t i = 0; i < N; ++i)
        if (bins[i]) {
            if (first == N) first = i;
            last = i;
        }
    Json counts = Json::array();
    if (first == N) {
        j[lo_key] = 0;
    } else {
        j[lo_key] = lo_value + int(first);
        for (std::size_t i = first; i <= last; ++i) counts.push_back(bins[i]);
    }
    j["counts"] = std::move(counts);
}

template <std::size_t N>
void untrimmed(const JsonReader& j, const char* lo_key, int lo_value,
               std::array<std::uint64_t, N>& bins)
{
    const JsonReader lo = j.at(lo_key);
    const int first = lo.int32();
    const JsonReader counts = j.array("counts");
    const std::size_t n = counts.size();
    if (n == 0) return;
    if (first < lo_value || std::int64_t(first) - lo_value + std::int64_t(n) > std::int64_t(N))
        lo.fail("\"" + std::string(lo_key) + "\" " + std::to_string(first) + " with " +
                std::to_string(n) + " counts lies outside [" + std::to_string(lo_value) + ", " +
                std::to_string(lo_value + int(N) - 1) + "]");
    for (std::size_t i = 0; i < n; ++i) {
        const JsonReader c = counts.element(i, "count");
        const std::int64_t v = c.int64();
        if (v < 0) c.fail_type("a count (>= 0)");
        bins[std::size_t(first - lo_value) + i] = std::uint64_t(v);
    }
}

std::uint64_t count_at(const JsonReader& j, std::string_view key)
{
    const JsonReader c = j.at(key);
    const std::int64_t v = c.int64();
    if (v < 0) c.fail_type("a count (>= 0)");
    return std::uint64_t(v);
}

Json value_to_json(const ValueHistogram& h)
{
    Json j;
    trimmed(j, "binade_min", k_numerics_binade_min, h.binades);
    j["zero"] = h.zero;
    j["pos_inf"] = h.pos_inf;
    j["neg_inf"] = h.neg_inf;
    j["nan"] = h.nan;
    return j;
}

ValueHistogram value_from_json(const JsonReader& j)
{
    ValueHistogram h;
    untrimmed(j, "binade_min", k_numerics_binade_min, h.binades);
    h.zero = count_at(j, "zero");
    h.pos_inf = count_at(j, "pos_inf");
    h.neg_inf = count_at(j, "neg_inf");
    h.nan = count_at(j, "nan");
    return h;
}

Json update_to_json(const UpdateHistogram& u)
{
    Json j;
    trimmed(j, "d_min", k_numerics_d_min, u.ratios);
    j["below"] = u.below;
    j["above"] = u.above;
    j["lost"] = u.lost;
    j["idle"] = u.idle;
    j["from_zero"] = u.from_zero;
    j["non_finite"] = u.non_finite;
    return j;
}

UpdateHistogram update_from_json(const JsonReader& j)
{
    UpdateHistogram u;
    untrimmed(j, "d_min", k_numerics_d_min, u.ratios);
    u.below = count_at(j, "below");
    u.above = count_at(j, "above");
    u.lost = count_at(j, "lost");
    u.idle = count_at(j, "idle");
    u.from_zero = count_at(j, "from_zero");
    u.non_finite = count_at(j, "non_finite");
    return u;
}

} // namespace

nlohmann::ordered_json numerics_sample_to_json(const NumericsSample& s)
{
    Json j;
    j["step"] = s.step;
    j["loss_scale"] = s.loss_scale;
    j["skipped"] = s.skipped;
    Json layers = Json::array();
    for (const LayerNumerics& l : s.layers) {
        Json lj;
        lj["path"] = l.path;
        lj["type"] = l.type;
        if (l.weights) lj["weights"] = value_to_json(*l.weights);
        if (l.activations) lj["activations"] = value_to_json(*l.activations);
        if (l.gradients) lj["gradients"] = value_to_json(*l.gradients);
        if (l.updates) lj["updates"] = update_to_json(*l.updates);
        layers.push_back(std::move(lj));
    }
    j["layers"] = std::move(layers);
    return j;
}

NumericsSample numerics_sample_from_json(const JsonReader& j)
{
    j.as_object();
    NumericsSample s;
    s.step = j.at("step").int64();
    s.loss_scale = j.at("loss_scale").number_float();
    s.skipped = j.at("skipped").boolean();
    const JsonReader layers = j.array("layers");
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const JsonReader lj = layers.element(i, "layer").as_object();
        LayerNumerics l;
        l.path = lj.at("path").string();
        l.type = lj.at("type").string();
        if (lj.find("weights")) l.weights = value_from_json(lj.object("weights"));
        if (lj.find("activations")) l.activations = value_from_json(lj.object("activations"));
        if (lj.find("gradients")) l.gradients = value_from_json(lj.object("gradients"));
        if (lj.find("updates")) l.updates = update_from_json(lj.object("updates"));
        s.layers.push_back(std::move(l));
    }
    return s;
}

} // namespace mixlab
