// `mixlab-cli train --resume FILE`: the run a checkpoint came from, continued. Its model
// and run config come from the file; what may be given beside them is how long the run
// goes on (--epochs, --steps), where and how it runs (--device, --no-cuda-graph, what it
// records) and where its outputs go. Anything else would make it another run, so it is
// refused by name rather than silently ignored or silently obeyed.
#include "train_options.h"

#include "mixlab/checkpoint.h"
#include "mixlab/error.h"

#include <array>
#include <string_view>

namespace mixlab::cli {
namespace {

// The options that choose the run itself: its model, data, precision, batch, optimizer,
// schedule, seed, loss scaling and fp8 settings (those of add_train_options not allowed
// with --resume).
constexpr std::array<std::string_view, 22> k_run_options = {"--model",
                                                            "--run",
                                                            "--dataset",
                                                            "--policy",
                                                            "--batch",
                                                            "--bptt",
                                                            "--lr",
                                                            "--lr-schedule",
                                                            "--optimizer",
                                                            "--master-weights",
                                                            "--clip",
                                                            "--loss-scale",
                                                            "--loss-scale-init",
                                                            "--seed",
                                                            "--synthetic-size",
                                                            "--vocab",
                                                            "--cifar100-labels",
                                                            "--augment",
                                                            "--fp8-history",
                                                            "--fp8-margin",
                                                            "--fp8-fast-forward",
                                                            "--load-weights"};

} // namespace

TrainInputs read_resume_inputs(const ArgParser& p)
{
    const std::string path = *p.value("--resume");
    for (std::string_view option : k_run_options)
        if (p.has(std::string(option)))
            throw InputError(std::string(option) +
                             " cannot be given with --resume: a resumed run keeps the model and "
                             "settings its checkpoint was written with (only --epochs or --steps "
                             "may extend it)");
    TrainInputs in;
    const CheckpointHeader h = read_checkpoint_header(path);
    in.spec = h.model;
    in.model_path = path;
    in.resume = path;
    RunConfig& c = in.config;
    c = h.config;

    // Extending: a new total, which must lie beyond the step the checkpoint is at.
    if (p.has("--epochs") && p.has("--steps"))
        throw InputError("give --epochs or --steps, not both");
    if (auto v = p.integer("--epochs", 1, 1000000)) {
        c.epochs = int(*v);
        c.steps = 0;
    }
    if (auto v = p.integer("--steps", 1, std::int64_t(1) << 40)) c.steps = *v;
    const std::int64_t total = c.steps > 0 ? c.steps : h.steps_per_epoch * c.epochs;
    if (total <= h.step)
        throw InputError("--resume: the checkpoint is at step " + std::to_string(h.step) +
                         " and the run ends at step " + std::to_string(total) +
                         "; give --epochs or --steps beyond it to train on");

    // How it runs and what it records, not what it computes.
    if (auto v = p.value("--device")) c.device = parse_device_choice(*v);
    if (p.flag("--no-cuda-graph")) c.cuda_graph = false;
    if (p.flag("--stop-on-nan")) c.stop_on_non_finite_loss = true;
    if (auto v = p.integer("--numerics-every", 0, 1 << 30)) c.numerics_every = int(*v);
    check_train_config(in, false);
    read_output_options(p, in, false);
    return in;
}

} // namespace mixlab::cli
