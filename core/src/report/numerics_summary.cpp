// Numerics summed over a run's samples (numerics_summary.h) and printed as a table.
#include "mixlab/numerics_summary.h"

#include <algorithm>
#include <cstdio>

namespace mixlab {

namespace {

KindSummary summarize(const BinadeCounts& c)
{
    KindSummary k;
    k.values = c.total();
    k.range99 = central_range(c);
    if (k.values) {
        k.zero = double(c.zero) / double(k.values);
        k.non_finite = double(c.non_finite) / double(k.values);
    }
    for (std::size_t i = 0; i < std::size(k_number_formats); ++i)
        k.formats[i] = format_shares(c, k_number_formats[i]);
    return k;
}

std::optional<KindSummary> summarize(const std::optional<BinadeCounts>& c)
{
    if (!c) return std::nullopt;
    return summarize(*c);
}

// What one layer's samples add up to before they are summarised.
struct LayerSums {
    std::string path, type;
    std::optional<BinadeCounts> weights, activations, gradients, gradients_scaled;
    std::optional<UpdateHistogram> updates;
    std::vector<std::pair<std::int64_t, double>> lost_fp16_by_step;
};

void add_to(std::optional<BinadeCounts>& into, const ValueHistogram& h, int shift)
{
    if (!into) into.emplace();
    into->add(h, shift);
}

void add_updates(UpdateHistogram& into, const UpdateHistogram& u)
{
    for (std::size_t i = 0; i < into.ratios.size(); ++i) into.ratios[i] += u.ratios[i];
    into.below += u.below;
    into.above += u.above;
    into.lost += u.lost;
    into.idle += u.idle;
    into.from_zero += u.from_zero;
    into.non_finite += u.non_finite;
}

} // namespace

std::size_t format_index(NumberFormat f)
{
    for (std::size_t i = 0; i < std::size(k_number_formats); ++i)
        if (k_number_formats[i] == f) return i;
    return 0;
}

std::optional<double> LayerNumericsSummary::lost_in(NumberFormat f) const
{
    return lost[format_index(f)];
}

std::string share_text(double share)
{
    if (share == 0) return "0";
    if (share < 0.00005) return "<0.01%";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", share * 100.0);
    return buf;
}

NumericsSummary summarize_numerics(const std::vector<NumericsSample>& samples)
{
    NumericsSummary s;
    std::vector<LayerSums> sums;
    std::optional<BinadeCounts> all_applied, all_scaled;
    bool any_scaled = false;
    for (const NumericsSample& sample : samples) {
        if (s.samples == 0) {
            s.first_step = sample.step;
            s.min_scale = s.max_scale = sample.loss_scale;
        }
        ++s.samples;
        s.last_step = std::max(s.last_step, sample.step);
        s.min_scale = std::min(s.min_scale, sample.loss_scale);
        s.max_scale = std::max(s.max_scale, sample.loss_scale);
        const std::optional<int> exponent = power_of_two_exponent(sample.loss_scale);
        if (!exponent) s.power_of_two_scales = false;
        if (sample.loss_scale != 1.0f) any_scaled = true;
        for (const LayerNumerics& l : sample.layers) {
            auto it = std::find_if(sums.begin(), sums.end(),
                                   [&](const LayerSums& x) { return x.path == l.path; });
            if (it == sums.end()) {
                sums.push_back(LayerSums{l.path, l.type, {}, {}, {}, {}, {}, {}});
                it = sums.end() - 1;
            }
            if (l.weights) add_to(it->weights, *l.weights, 0);
            if (l.activations) add_to(it->activations, *l.activations, 0);
            if (l.gradients) {
                add_to(it->gradients_scaled, *l.gradients, 0);
                add_to(all_scaled, *l.gradients, 0);
                if (exponent) {
                    add_to(it->gradients, *l.gradients, -*exponent);
                    add_to(all_applied, *l.gradients, -*exponent);
                }
            }
            if (l.updates) {
                if (!it->updates) it->updates.emplace();
                add_updates(*it->updates, *l.updates);
                if (auto lost = lost_update_share(*l.updates, NumberFormat::FP16))
                    it->lost_fp16_by_step.emplace_back(sample.step, *lost);
            }
        }
    }
    for (LayerSums& l : sums) {
        LayerNumericsSummary out;
        out.path = l.path;
        out.type = l.type;
        out.weights = summarize(l.weights);
        out.activations = summarize(l.activations);
        if (s.power_of_two_scales) out.gradients = summarize(l.gradients);
        if (any_scaled) out.gradients_scaled = summarize(l.gradients_scaled);
        if (l.updates)
            for (std::size_t i = 0; i < std::size(k_number_formats); ++i)
                out.lost[i] = lost_update_share(*l.updates, k_number_formats[i]);
        out.lost_fp16_by_step = std::move(l.lost_fp16_by_step);
        s.layers.push_back(std::move(out));
    }
    if (s.power_of_two_scales) s.gradients = summarize(all_applied);
    if (any_scaled) s.gradients_scaled = summarize(all_scaled);
    return s;
}

std::string numerics_summary_text(const NumericsSummary& s, const std::string& title)
{
    std::string out;
    char buf[256];
    auto scale_text = [](float v) {
        char b[32];
        std::snprintf(b, sizeof b, "%g", double(v));
        return std::string(b);
    };
    std::snprintf(buf, sizeof buf, "%s: %d numerics samples, steps %lld..%lld, loss scale ",
                  title.c_str(), s.samples, static_cast<long long>(s.first_step),
                  static_cast<long long>(s.last_step));
    out += buf;
    out += s.min_scale == s.max_scale ? scale_text(s.min_scale)
                                      : scale_text(s.min_scale) + ".." + scale_text(s.max_scale);
    out += "\n  per format: share that would overflow / land in subnormals / flush to zero\n";
    std::snprintf(buf, sizeof buf, "  %-22s %-16s %-8s", "", "99% of values", "zero");
    out += buf;
    for (NumberFormat f : k_number_formats) {
        std::snprintf(buf, sizeof buf, " %-26s", std::string(format_limits(f).name).c_str());
        out += buf;
    }
    out += "\n";
    auto kind_line = [&](const char* label, const KindSummary& k) {
        std::string range = "-";
        if (k.range99)
            range = "2^" + std::to_string(k.range99->lo) + "..2^" + std::to_string(k.range99->hi);
        std::snprintf(buf, sizeof buf, "    %-20s %-16s %-8s", label, range.c_str(),
                      share_text(k.zero).c_str());
        out += buf;
        for (const FormatShares& f : k.formats) {
            const std::string cell = share_text(f.overflow) + " / " + share_text(f.subnormal) +
                                     " / " + share_text(f.flush);
            std::snprintf(buf, sizeof buf, " %-26s", cell.c_str());
            out += buf;
        }
        if (k.non_finite > 0) out += "  inf/NaN " + share_text(k.non_finite);
        out += "\n";
    };
    for (const LayerNumericsSummary& l : s.layers) {
        out += "  " + l.path + " (" + l.type + ")\n";
        if (l.weights) kind_line("weights", *l.weights);
        if (l.activations) kind_line("activations", *l.activations);
        if (l.gradients) kind_line("gradients (applied)", *l.gradients);
        if (l.gradients_scaled) kind_line("gradients (scaled)", *l.gradients_scaled);
        if (l.lost.front()) {
            out += "    updates lost to half-ulp rounding by weights in";
            for (std::size_t i = 0; i < std::size(k_number_formats); ++i)
                out += std::string(i ? ", " : " ") +
                       std::string(format_limits(k_number_formats[i]).name) + " " +
                       (l.lost[i] ? share_text(*l.lost[i]) : std::string("-"));
            out += "\n";
        }
    }
    if (!s.power_of_two_scales)
        out += "  (a loss scale was not a power of two: gradients are shown as computed only)\n";
    // The table's last column is padded like the others: no trailing blanks on a line.
    std::string trimmed;
    for (char c : out) {
        if (c == '\n')
            while (!trimmed.empty() && trimmed.back() == ' ') trimmed.pop_back();
        trimmed += c;
    }
    return trimmed;
}

} // namespace mixlab
