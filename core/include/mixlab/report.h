// The explain report: one self-contained HTML5 page (no external files, no scripts) with
// a compare group's environment, model, configs, results, charts as inline SVG, the
// phase and per-layer breakdown and the explanation sentences.
#pragma once
#include "mixlab/ceilings.h"
#include "mixlab/environment.h"
#include "mixlab/explain.h"
#include "mixlab/run_config.h"

#include <optional>
#include <string>
#include <vector>

namespace mixlab {

struct ReportInput {
    std::string title;                  // empty: "MixLab report: <model name>"
    std::string created_at;             // shown as the report's date; empty: now, UTC
    std::string model_name;             // empty: the first run's graph name
    std::string dataset;                // the dataset's name, shown beside the model; may be empty
    std::vector<RunFacts> runs;         // the group, baseline rules as in explain()
    std::vector<RunConfig> configs;     // one per run, same order; empty: facts only
    std::vector<std::string> run_names; // one per run; empty: the policy names
    std::vector<Explanation> explanations;
    Environment environment;
    std::optional<Ceilings> ceilings; // adds roofline floors when the device's are known
};

// Every text from the input is HTML-escaped. Charts (loss curves, step-time bars, the
// phase breakdown when every run has a profile) are inline <svg> elements that stand
// alone (xmlns, width, height, viewBox, presentation attributes only), each inside a
// <figure class="chart">, so a renderer without inline SVG can take them out one by one.
std::string explain_report_html(const ReportInput& input);

} // namespace mixlab
