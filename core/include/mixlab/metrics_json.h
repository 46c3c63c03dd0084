// The JSON forms of what a run reports (trainer.h's StepMetrics, EpochMetrics, RunEvent
// and RunSummary), one set of keys for the CLI's logs and the app's experiment files.
// Apart from trainer.h so that what reads and writes files needs no training API.
#pragma once
#include "mixlab/trainer.h"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string_view>
#include <vector>

namespace mixlab {

class JsonReader;

// One step: {"step", "epoch", "loss", "accuracy", "step_ms", "wall_ms", "samples_per_s",
// "loss_scale", "next_loss_scale", "overflow", "skipped"}; the StepMetrics fields under
// their own names. Non-finite numbers are null and read back as NaN.
nlohmann::ordered_json step_metrics_to_json(const StepMetrics& m);
StepMetrics step_metrics_from_json(const JsonReader& json);
// One epoch: {"epoch", "train_loss", "train_accuracy", "test_loss", "test_accuracy",
// "seconds", "skipped_steps"}.
nlohmann::ordered_json epoch_metrics_to_json(const EpochMetrics& m);
EpochMetrics epoch_metrics_from_json(const JsonReader& json);

// The same keys as a table, {"columns": [keys], "rows": [[values in column order]]}: one
// array a step keeps a 100,000-step run's file a third of the size objects make it. The
// reader finds the columns by name; each row must have a value for every one.
nlohmann::ordered_json step_metrics_table(const std::vector<StepMetrics>& steps);
std::vector<StepMetrics> step_metrics_from_table(const JsonReader& json);
nlohmann::ordered_json epoch_metrics_table(const std::vector<EpochMetrics>& epochs);
std::vector<EpochMetrics> epoch_metrics_from_table(const JsonReader& json);

// {"step", "kind": run_event_kind_name, "message"}, and "fp8_amax_jump" on the events that
// carry one (fp8_amax_jump_to_json's form); events without the key read as message only.
nlohmann::ordered_json run_event_to_json(const RunEvent& e);
RunEvent run_event_from_json(const JsonReader& json);
// The kind run_event_kind_name gives `name`, or none.
std::optional<RunEvent::Kind> parse_run_event_kind(std::string_view name);

// {"reports_stopped": false, "layer", "operand": fp8_operand_name, "amax", "history_max",
//  "more_tensors"} for a jump; {"reports_stopped": true} alone for the trainer's last report.
nlohmann::ordered_json fp8_amax_jump_to_json(const Fp8AmaxJump& jump);
Fp8AmaxJump fp8_amax_jump_from_json(const JsonReader& json);
// The operand fp8_operand_name gives `name`, or none.
std::optional<Fp8Operand> parse_fp8_operand(std::string_view name);

// {"steps", "skipped_steps", "epochs_done", "mean_step_ms", "median_step_ms",
//  "final_train_loss", "final_test_loss", "final_test_accuracy", "final_loss_scale",
//  "wall_seconds", "stopped"}, and "halted" only when the run ended itself (its reason).
// The test numbers are null when the run never evaluated.
nlohmann::ordered_json run_summary_to_json(const RunSummary& s);
RunSummary run_summary_from_json(const JsonReader& json);

} // namespace mixlab
