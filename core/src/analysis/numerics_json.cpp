// The JSON form of a numerics sample (numerics.h): histograms trimmed to their non-zero
// bins, so a sample of a ten-layer model stays a few kilobytes.
#include "mixlab/numerics.h"

#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <type_traits>
#include <utility>

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

// Where a histogram type keeps its bins and its counts apart, and their JSON keys: the one
// description the writer and the reader below share.
template <class H>
struct Layout;

template <>
struct Layout<ValueHistogram> {
    static constexpr const char* lo_key = "binade_min";
    static constexpr int lo = k_numerics_binade_min;
    static constexpr auto bins = &ValueHistogram::binades;
    static constexpr std::pair<const char*, std::uint64_t ValueHistogram::*> counts[] = {
        {"zero", &ValueHistogram::zero},
        {"pos_inf", &ValueHistogram::pos_inf},
        {"neg_inf", &ValueHistogram::neg_inf},
        {"nan", &ValueHistogram::nan}};
};

template <>
struct Layout<UpdateHistogram> {
    static constexpr const char* lo_key = "d_min";
    static constexpr int lo = k_numerics_d_min;
    static constexpr auto bins = &UpdateHistogram::ratios;
    static constexpr std::pair<const char*, std::uint64_t UpdateHistogram::*> counts[] = {
        {"below", &UpdateHistogram::below},         {"above", &UpdateHistogram::above},
        {"lost", &UpdateHistogram::lost},           {"idle", &UpdateHistogram::idle},
        {"from_zero", &UpdateHistogram::from_zero}, {"non_finite", &UpdateHistogram::non_finite}};
};

template <class H>
Json histogram_to_json(const H& h)
{
    using L = Layout<H>;
    Json j;
    trimmed(j, L::lo_key, L::lo, h.*L::bins);
    for (const auto& [key, member] : L::counts) j[key] = h.*member;
    return j;
}

template <class H>
H histogram_from_json(const JsonReader& j)
{
    using L = Layout<H>;
    H h;
    untrimmed(j, L::lo_key, L::lo, h.*L::bins);
    for (const auto& [key, member] : L::counts) h.*member = count_at(j, key);
    return h;
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
        if (l.weights) lj["weights"] = histogram_to_json(*l.weights);
        if (l.activations) lj["activations"] = histogram_to_json(*l.activations);
        if (l.gradients) lj["gradients"] = histogram_to_json(*l.gradients);
        if (l.updates) lj["updates"] = histogram_to_json(*l.updates);
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
        auto read = [&lj](const char* key, auto& into) {
            using H = typename std::remove_reference_t<decltype(into)>::value_type;
            if (lj.find(key)) into = histogram_from_json<H>(lj.object(key));
        };
        read("weights", l.weights);
        read("activations", l.activations);
        read("gradients", l.gradients);
        read("updates", l.updates);
        s.layers.push_back(std::move(l));
    }
    return s;
}

} // namespace mixlab
