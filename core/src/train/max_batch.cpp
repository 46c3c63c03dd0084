// The max-batch search (doubling, then bisection on a tensor-core-friendly grid), the
// same search ended by a stop between trials and what it found so far, the synthetic data sized to a search, and the JSON form;
// what one trial does is the caller's.
#include "mixlab/max_batch.h"

#include "mixlab/dataset.h"
#include "mixlab/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace mixlab {

namespace {

// Larger than any batch a run accepts; keeps the doubling clear of int overflow.
constexpr int k_max_limit = 1 << 24;

// The next batch to try strictly between lo (fits) and hi (does not), or 0 when the gap
// is already within the resolution.
int next_probe(int lo, int hi, const MaxBatchOptions& o)
{
    if (hi - lo <= 1) return 0;
    if (lo < o.multiple) // small batches: every one counts, 3 against 4 is a third more
        return lo + (hi - lo) / 2;
    const int tolerance = std::max(o.multiple, int(std::floor(o.resolution * double(lo))));
    if (hi - lo <= tolerance) return 0;
    int mid = (lo + (hi - lo) / 2) / o.multiple * o.multiple;
    if (mid <= lo) mid = (lo / o.multiple + 1) * o.multiple; // < hi: the gap exceeds one multiple
    return mid;
}

} // namespace

const BatchTrial* MaxBatchResult::largest() const
{
    for (const BatchTrial& t : trials)
        if (t.batch == largest_fit && t.fits) return &t;
    return nullptr;
}

void validate_max_batch_options(const MaxBatchOptions& o)
{
    if (o.start < 1)
        throw InputError("max batch: start must be at least 1, got " + std::to_string(o.start));
    if (o.limit < o.start || o.limit > k_max_limit)
        throw InputError("max batch: limit must be between start (" + std::to_string(o.start) +
                         ") and " + std::to_string(k_max_limit) + ", got " +
                         std::to_string(o.limit));
    if (o.multiple < 1)
        throw InputError("max batch: multiple must be at least 1, got " +
                         std::to_string(o.multiple));
    if (!(o.resolution >= 0.0 && o.resolution < 1.0))
        throw InputError("max batch: resolution must be a fraction in [0, 1), got " +
                         std::to_string(o.resolution));
    if (o.warmup_steps < 0)
        throw InputError("max batch: warm-up steps cannot be negative, got " +
                         std::to_string(o.warmup_steps));
    if (o.timed_steps < 1)
        throw InputError("max batch: at least one timed step is needed, got " +
                         std::to_string(o.timed_steps));
}

MaxBatchResult find_max_batch(const std::function<BatchTrial(int batch)>& trial,
                              const MaxBatchOptions& o)
{
    validate_max_batch_options(o);
    std::map<int, BatchTrial> seen;
    const auto fits = [&](int batch) {
        BatchTrial t = trial(batch);
        t.batch = batch;
        if (t.fits) {
            t.why_not.clear();
            t.out_of_memory = false;
        }
        return seen.insert_or_assign(batch, std::move(t)).first->second.fits;
    };

    // lo: the largest batch seen to fit (0: none); hi: the smallest failure above it
    // (0: none). Every later probe lies strictly between them, so whatever a trial says,
    // lo stays a fit below hi and no batch is tried twice.
    int lo = 0, hi = 0;
    if (fits(o.start)) {
        lo = o.start;
        while (lo < o.limit) {
            const int next = lo > o.limit / 2 ? o.limit : lo * 2;
            if (!fits(next)) {
                hi = next;
                break;
            }
            lo = next;
        }
    } else {
        hi = o.start;
        while (hi > 1) {
            const int next = hi / 2;
            if (fits(next)) {
                lo = next;
                break;
            }
            hi = next;
        }
    }
    if (hi != 0)
        for (int mid = next_probe(lo, hi, o); mid != 0; mid = next_probe(lo, hi, o))
            (fits(mid) ? lo : hi) = mid;

    MaxBatchResult r;
    for (auto& [batch, t] : seen) r.trials.push_back(std::move(t));
    r.largest_fit = lo;
    r.first_failure = hi;
    r.reached_limit = lo == o.limit;
    if (hi != 0)
        for (const BatchTrial& t : r.trials)
            if (t.batch == hi) {
                r.failure_reason = t.why_not;
                r.failure_out_of_memory = t.out_of_memory;
            }
    return r;
}

bool size_synthetic_for_search(DatasetOptions& ds, const MaxBatchOptions& o)
{
    if ((ds.name.empty() ? default_dataset_name() : ds.name) != "synthetic") return false;
    ds.synthetic_train = std::min<std::int64_t>(
        k_search_synthetic_per_batch * std::int64_t(o.limit), k_search_synthetic_cap);
    ds.synthetic_test = std::min<std::int64_t>(k_search_synthetic_test, ds.synthetic_train);
    return true;
}

MaxBatchSearch search_max_batch(const std::function<BatchTrial(int batch)>& trial,
                                const MaxBatchOptions& options, std::stop_token stop)
{
    struct Stopped {};
    std::vector<BatchTrial> seen;
    const auto stoppable = [&](int batch) {
        if (stop.stop_requested()) throw Stopped{};
        BatchTrial t = trial(batch);
        seen.push_back(t);
        return t;
    };
    try {
        return MaxBatchSearch{find_max_batch(stoppable, options), true};
    } catch (const Stopped&) {
        return MaxBatchSearch{partial_max_batch_result(std::move(seen)), false};
    }
}

MaxBatchResult partial_max_batch_result(std::vector<BatchTrial> trials)
{
    std::sort(trials.begin(), trials.end(),
              [](const BatchTrial& a, const BatchTrial& b) { return a.batch < b.batch; });
    MaxBatchResult r;
    for (const BatchTrial& t : trials)
        if (t.fits) r.largest_fit = std::max(r.largest_fit, t.batch);
    r.trials = std::move(trials);
    return r;
}

std::string max_batch_result_to_json(const MaxBatchResult& r)
{
    nlohmann::json curve = nlohmann::json::array();
    for (const BatchTrial& t : r.trials) {
        nlohmann::json j = {{"batch", t.batch},
                            {"fits", t.fits},
                            {"device_bytes", t.device_bytes},
                            {"seconds", t.seconds}};
        if (t.fits) {
            j["step_ms"] = t.step_ms;
            j["samples_per_s"] = t.samples_per_s;
        } else {
            j["why_not"] = t.why_not;
            j["out_of_memory"] = t.out_of_memory;
        }
        curve.push_back(std::move(j));
    }
    nlohmann::json out = {
        {"largest_fit", r.largest_fit},       {"first_failure", r.first_failure},
        {"failure_reason", r.failure_reason}, {"failure_out_of_memory", r.failure_out_of_memory},
        {"reached_limit", r.reached_limit},   {"curve", std::move(curve)}};
    return out.dump(2);
}

} // namespace mixlab
