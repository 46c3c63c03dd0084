// TrainingRun: one training step at a time, all of it enqueued on the backend's stream
// with no host sync; per-step records come back through a ring of pinned slots and
// are reported a few steps behind, so the host never waits on the step it just queued.
// Where the backend can, the step is recorded once (a CUDA graph) and replayed: what
// changes from step to step (the batch's position, augmentation and dropout draws) is
// read on the device from a step counter, and the record of each step is copied out
// after the replay.
#include "mixlab/trainer.h"

#include "base/hd_math.h"
#include "mixlab/error.h"
#include "mixlab/step_time.h"
#include "mixlab/text_corpus.h"
#include "model/model_weights.h"
#include "model/network.h"
#include "train/trainer_impl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>

namespace mixlab {

std::string_view run_event_kind_name(RunEvent::Kind k)
{
    switch (k) {
    case RunEvent::Kind::Info: return "info";
    case RunEvent::Kind::Warning: return "warning";
    case RunEvent::Kind::ScaleChange: return "loss_scale";
    case RunEvent::Kind::SkippedStep: return "skipped_step";
    case RunEvent::Kind::Error: return "error";
    }
    return "info";
}

std::string_view fp8_operand_name(Fp8Operand o)
{
    switch (o) {
    case Fp8Operand::X: return "x";
    case Fp8Operand::W: return "w";
    case Fp8Operand::Dy: return "dy";
    }
    return "x";
}

double perplexity(double loss) { return std::exp(loss); }

void require_matching_data(bool language_model, const std::string& model, const Dataset& data)
{
    if (language_model == data.is_text()) return;
    const std::string m = model.empty() ? std::string("the model") : "the model " + model;
    throw InputError(language_model
                         ? m +
                               " is a language model (it starts with an embedding) but the "
                               "dataset " +
                               data.name +
                               " is images; give it a word-level text corpus (a folder of "
                               "train.txt, valid.txt and test.txt) or synthetic-text"
                         : "the dataset " + data.name + " is a word-level text corpus but " + m +
                               " takes images; a language model starts with an embedding (see "
                               "the word-lm presets)");
}

DeviceDataset::DeviceDataset(const Dataset& data, Backend& backend) : host(data)
{
    if (data.is_text()) {
        auto upload_i32 = [&backend](const std::vector<std::int32_t>& v) {
            Buffer b = backend.alloc(std::max<std::size_t>(v.size(), 1), DType::I32);
            if (!v.empty()) backend.upload_raw(b, v.data(), v.size() * sizeof(std::int32_t));
            return b;
        };
        train_tokens = upload_i32(data.text->train);
        valid_tokens = upload_i32(data.text->valid);
        test_tokens = upload_i32(data.text->test);
        return;
    }
    auto upload_u8 = [&backend](const std::vector<std::uint8_t>& v) {
        Buffer b = backend.alloc(std::max<std::size_t>(v.size(), 1), DType::U8);
        if (!v.empty()) backend.upload_raw(b, v.data(), v.size());
        return b;
    };
    train_images = upload_u8(data.train.images);
    train_labels = upload_u8(data.train.labels);
    test_images = upload_u8(data.test.images);
    test_labels = upload_u8(data.test.labels);
    std::vector<std::int32_t> order(std::size_t(std::max<std::int64_t>(data.test.n, 1)));
    std::iota(order.begin(), order.end(), 0);
    test_order = backend.alloc(order.size(), DType::I32);
    backend.upload_raw(test_order, order.data(), order.size() * sizeof(std::int32_t));
    norm.channels = std::clamp(data.channels, 1, 4);
    for (int c = 0; c < norm.channels; ++c) {
        norm.mean[c] = data.mean[c];
        norm.inv_std[c] = 1.0f / std::max(data.stddev[c], 1e-3f);
    }
}

std::vector<std::int32_t> epoch_order(std::int64_t n, std::uint64_t seed, int epoch)
{
    // Fisher-Yates driven by the counter-based hash: the same order on every backend,
    // policy and platform for a given seed and epoch.
    std::vector<std::int32_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    for (std::int64_t i = n - 1; i > 0; --i) {
        std::uint64_t r = hd::mix64(seed ^ hd::mix64(0xD47A0000ull + std::uint64_t(epoch)) ^
                                    hd::mix64(std::uint64_t(i)));
        std::int64_t j = std::int64_t(r % std::uint64_t(i + 1));
        std::swap(order[std::size_t(i)], order[std::size_t(j)]);
    }
    return order;
}

namespace {

// An OutOfMemoryError from the backend, with what the user can change named: the run,
// its batch, and (where the policy keeps activations in 32 bits) mixed precision.
OutOfMemoryError out_of_memory_in(const OutOfMemoryError& e, const RunConfig& config,
                                  const std::string& when)
{
    const bool wide = config.policy == Policy::FP32 || config.policy == Policy::TF32;
    return OutOfMemoryError(
        "out of memory " + when + " of the " + std::string(policy_name(config.policy)) +
        " run at batch size " + std::to_string(config.batch_size) + ": " + e.what() +
        ". Lower the batch size" +
        (wide ? std::string(", or train under a mixed-precision policy (mixed_fp16 or "
                            "mixed_bf16), which keeps activations in 16 bits and needs about "
                            "half the memory for them")
              : std::string()) +
        ".");
}

std::string format_scale(float s)
{
    std::ostringstream o;
    o << s;
    return o.str();
}

} // namespace

// Everything the run allocates, it allocates here; a device too small for it fails here
// (the function-try-block adds the run's batch and policy to the message).
TrainingRun::TrainingRun(const Graph& graph, const RunConfig& config, DeviceDataset& data,
                         Backend& backend, int run_index)
try : m_impl(std::make_unique<Impl>(backend, data, run_index)), m_graph(graph), m_config(config) {
    validate_run_config(config);
    check_policy_supported(backend.info(), config.policy);
    Impl& s = *m_impl;
    const Dataset& host = data.host;
    s.lm = graph.input.sequence;
    require_matching_data(s.lm, graph.name, host);
    if (s.lm) {
        if (graph.classes != host.classes)
            throw InputError("the model's vocabulary is " + std::to_string(graph.classes) +
                             " words but the corpus has " + std::to_string(host.classes));
        // Names the split shorter than one batch of bptt + 1 tokens per column.
        check_corpus_fits(*host.text, config.batch_size, config.bptt);
    } else if (graph.input.elements() != host.sample_size())
        throw InputError("the model expects inputs of " + graph.input.to_string() +
                         " but the dataset's samples are " + std::to_string(host.height) + "x" +
                         std::to_string(host.width) + "x" + std::to_string(host.channels));
    if (!s.lm && graph.classes != host.classes)
        throw InputError("the model is built for " + std::to_string(graph.classes) +
                         " classes but the dataset has " + std::to_string(host.classes));
    // The one check of a batch against the data, for every front end (a batch that does
    // not fit once would leave an epoch of no steps).
    if (!s.lm && host.train.n < config.batch_size)
        throw InputError("batch size " + std::to_string(config.batch_size) +
                         " is larger than the training split of " + host.name + " (" +
                         std::to_string(host.train.n) + " samples)");

    s.batch = config.batch_size;
    s.image = ImageShape{host.height, host.width, host.channels};
    s.augment.random_crop = config.dataset.crop_padding > 0;
    s.augment.crop_padding = config.dataset.crop_padding;
    s.augment.horizontal_flip = config.dataset.horizontal_flip;
    s.augment.seed = config.seed ^ 0xA06A0000ull;
    s.graph_head = graph.head;
    s.classes = graph.classes;
    s.opt = config.optimizer;
    s.schedule = config.lr_schedule;
    if (s.lm) {
        // Full windows only (static shapes): the example's last, shorter window of each
        // epoch (fewer than bptt rows) is dropped.
        s.bptt = config.bptt;
        s.train_column = host.train.n / config.batch_size;
        s.steps_per_epoch = (s.train_column - 1) / s.bptt;
        s.rows_per_step = config.batch_size * s.bptt;
    } else {
        s.steps_per_epoch = host.train.n / config.batch_size; // the last partial batch is dropped
        s.rows_per_step = config.batch_size;
    }
    s.total_steps = config.steps > 0 ? config.steps : s.steps_per_epoch * config.epochs;

    const LossScaleMode mode = effective_loss_scale_mode(config);
    s.scaling.mode = mode;
    s.scaling.growth_factor = config.loss_scale.growth_factor;
    s.scaling.backoff_factor = config.loss_scale.backoff_factor;
    s.scaling.growth_interval = config.loss_scale.growth_interval;

    s.net =
        std::make_unique<Network>(graph, config.policy, config.optimizer, backend,
                                  config.batch_size, s.lm ? s.bptt : 1, config.seed, config.fp8);
    s.scaler = backend.alloc(k_scaler_fields, DType::F32);
    const float init_scale = mode == LossScaleMode::None ? 1.0f : config.loss_scale.init;
    const float scaler_init[k_scaler_fields] = {init_scale, 0, 0, 0};
    backend.upload_f32(s.scaler, scaler_init, k_scaler_fields);
    s.last_scale = init_scale;
    s.record = backend.alloc(k_record_fields, DType::F32);
    backend.fill(s.record, 0.0f);
    s.step_counter = backend.alloc(2, DType::I32);
    const std::int32_t zero_step[2] = {0, 0};
    backend.upload_raw(s.step_counter, zero_step, sizeof zero_step);
    s.net->set_step_counter(StepCounter{&s.step_counter, s.steps_per_epoch});
    s.graph_wanted = config.cuda_graph;
    s.stop_on_non_finite = config.stop_on_non_finite_loss;
    s.eval_record = backend.alloc(k_record_fields, DType::F32);
    if (!s.lm) s.order = backend.alloc(std::size_t(host.train.n), DType::I32);
    s.host_records = backend.host_alloc(std::size_t(k_ring) * k_record_fields);
    for (int i = 0; i < k_ring; ++i) {
        s.start_events.push_back(backend.create_event());
        s.end_events.push_back(backend.create_event());
    }
    s.launch_wall_ms.assign(k_ring, 0.0);
    if (s.net->fp8_meta()) s.fp8 = std::make_unique<Fp8ScaleWatch>(backend, *s.net, k_ring);
    if (config.numerics_every > 0)
        s.numerics =
            std::make_unique<NumericsSampler>(backend, *s.net, config.numerics_every, k_ring);
    if (const char* p = std::getenv("MIXLAB_PROFILE_STEP")) s.profile_step = std::atoll(p);
    s.step_ms.reserve(std::size_t(std::min<std::int64_t>(s.total_steps, 1 << 20)));
} catch (const OutOfMemoryError& e) {
    throw out_of_memory_in(e, config, "setting up");
}

TrainingRun::~TrainingRun() = default;

void TrainingRun::set_stop_token(std::stop_token stop) { m_impl->stop = std::move(stop); }
std::int64_t TrainingRun::total_steps() const { return m_impl->total_steps; }
std::int64_t TrainingRun::steps_done() const { return m_impl->launched; }
std::int64_t TrainingRun::steps_per_epoch() const { return m_impl->steps_per_epoch; }
std::int64_t TrainingRun::device_bytes() const { return m_impl->net->device_bytes(); }
bool TrainingRun::finished() const
{
    return m_impl->launched >= m_impl->total_steps || !m_impl->halted.empty();
}
std::vector<std::string> TrainingRun::describe() const { return m_impl->net->describe(); }

std::vector<float> TrainingRun::read_parameters() { return m_impl->net->read_parameters(); }

void TrainingRun::save_weights(const std::string& path, const ModelSpec& spec)
{
    mixlab::save_weights(*m_impl->net, path, spec, m_config.policy, steps_done());
}

void TrainingRun::load_weights(const std::string& path)
{
    mixlab::load_weights(*m_impl->net, path);
}

// The step itself, with every step-dependent value read from the step counter on the
// device (the host numbers passed along are the same values, for backends that run
// each op at once): the same calls record once and replay for every step.
void TrainingRun::Impl::enqueue_step(const RunConfig& config, OutputHead head, int classes)
{
    // With marks (profiling), an event at every phase boundary.
    auto mark = [this](int at) {
        if (marks && marks->phases_on) marks->at[std::size_t(at)]->record();
    };
    const StepCounter counter{&step_counter, steps_per_epoch};
    Augmentation aug = augment;
    aug.step = std::uint64_t(launched);
    mark(0);
    // mixed_fp8 with an fp8 first layer: the batch gathered straight into its fp8 operands.
    const std::optional<Fp8Batch> quantized = lm ? std::nullopt : net->fp8_batch(true);
    if (lm)
        backend.gather_tokens(data.train_tokens, train_column, batch, bptt, 0, counter,
                              net->input(), net->labels());
    else if (quantized)
        backend.gather_batch_fp8(data.train_images, data.train_labels, order, 0, batch, image,
                                 data.norm, aug, counter, *quantized, net->input(), net->labels());
    else
        backend.gather_batch(data.train_images, data.train_labels, order, 0, batch, image,
                             data.norm, aug, counter, net->input(), net->labels());
    mark(int(StepPhase::Input) + 1);
    net->forward(batch, true, std::uint64_t(launched), quantized.has_value(), sampling);
    if (sampling) numerics->enqueue_forward();
    mark(int(StepPhase::Forward) + 1);
    const bool scaled = scaling.mode != LossScaleMode::None;
    // A language model's loss is over every token of the window (rows_per_step rows of
    // logits), in fp32 like any other.
    backend.cross_entropy(head, net->logits(), net->labels(), rows_per_step, classes,
                          scaled ? &scaler : nullptr, &net->dlogits(), record, 0);
    mark(int(StepPhase::Loss) + 1);
    net->backward(batch, std::uint64_t(launched));
    if (sampling) numerics->enqueue_backward();
    mark(int(StepPhase::Backward) + 1);
    // mixed_fp8's delayed scaling: every fp8 tensor's next scale from its amax history,
    // this step's amax among it (recorded with the step, so each replay updates them).
    // Before the optimizer, which quantizes the new weights with W's next scale and
    // records their amax as the next step's (every amax of this step is in by now).
    if (Buffer* meta = net->fp8_meta())
        backend.fp8_update_scales(*meta, net->fp8_tensors(), config.fp8.amax_history,
                                  config.fp8.margin);
    // optimizer_step records at[LossScaling + 1] itself, between its check and update.
    // The rate is the run's own (opt): the plateau schedule lowers it.
    backend.optimizer_step(net->param_table(), opt, scaling, scaler, record, 0);
    if (sampling) numerics->enqueue_update();
    backend.advance_step(step_counter);
    mark(int(StepPhase::Optimizer) + 1);
}

// Records the step into `into`; false (with a warning, once) when it cannot be.
bool TrainingRun::Impl::record_step(MetricsSink& sink, const RunConfig& config, OutputHead head,
                                    int classes, std::unique_ptr<StepGraph>& into)
{
    if (!backend.begin_capture()) return false;
    std::string why;
    try {
        enqueue_step(config, head, classes);
    } catch (const std::exception& e) {
        why = e.what();
    }
    std::string end_why;
    std::unique_ptr<StepGraph> recorded = backend.end_capture(&end_why);
    if (recorded && why.empty()) {
        into = std::move(recorded);
        return true;
    }
    graph_wanted = false;
    sink.on_event(run_index,
                  {RunEvent::Kind::Warning, launched + 1,
                   "training step not recorded as a CUDA graph (" + (why.empty() ? end_why : why) +
                       "); running it operation by operation"});
    return false;
}

// Replays the recorded step, or records it (from the second step on: the first builds
// every GEMM and convolution plan, which may synchronise), or runs it op by op.
void TrainingRun::Impl::run_step(MetricsSink& sink, const RunConfig& config, OutputHead head,
                                 int classes)
{
    // A profiled step replays its own recording (with the events in it) when the timed
    // steps replay theirs, so both are measured the same way.
    const bool profiling = marks != nullptr;
    // The layer events and the optimizer's split point exist only in profiled steps
    // (evaluation passes in between stay unmarked).
    struct Unmark {
        Impl& s;
        ~Unmark()
        {
            s.net->set_layer_marks(nullptr);
            s.backend.set_inf_check_marker(nullptr);
        }
    } unmark{*this};
    if (profiling && marks->layers_on) net->set_layer_marks(&marks->layers);
    if (profiling && marks->phases_on)
        backend.set_inf_check_marker(marks->at[std::size_t(StepPhase::LossScaling) + 1].get());
    // A sampled step (numerics) replays a recording of its own: the other steps' recording
    // holds no numerics ops and costs nothing more.
    std::unique_ptr<StepGraph>& g = profiling ? profile_graph : sampling ? numerics_graph : graph;
    if (g) {
        if (g->replay()) return;
        g.reset(); // memory it points at may have moved: record again
    }
    const bool replaying_run =
        graph_wanted && launched > first_step && (!profiling || recordings > 0);
    if (replaying_run && record_step(sink, config, head, classes, g)) {
        if (sampling)
            sink.on_event(run_index,
                          {RunEvent::Kind::Info, launched + 1,
                           "numerics sampling step recorded as a CUDA graph of its own (" +
                               std::to_string(g->operations()) + " operations)"});
        else if (!profiling && recordings++ == 0)
            sink.on_event(run_index,
                          {RunEvent::Kind::Info, launched + 1,
                           "training step recorded as one CUDA graph of " +
                               std::to_string(g->operations()) +
                               " operations, replayed every step (one launch per step)"});
        g->replay(); // recording ran nothing: this runs the step
        return;
    }
    enqueue_step(config, head, classes);
}

void TrainingRun::Impl::report(MetricsSink& sink, std::int64_t step_index)
{
    Impl& s = *this;
    const int slot = int(step_index % k_ring);
    s.end_events[std::size_t(slot)]->synchronize();
    const float* r = s.host_records + std::size_t(slot) * k_record_fields;
    StepMetrics m;
    m.step = step_index + 1;
    m.epoch = int(step_index / s.steps_per_epoch) + 1;
    m.loss = r[k_rec_loss_sum] / float(s.rows_per_step);
    m.accuracy = r[k_rec_correct] / float(s.rows_per_step);
    m.step_ms =
        s.end_events[std::size_t(slot)]->elapsed_ms_since(*s.start_events[std::size_t(slot)]);
    m.wall_ms = s.launch_wall_ms[std::size_t(slot)];
    m.samples_per_s = m.step_ms > 0 ? s.rows_per_step / (double(m.step_ms) / 1000.0) : 0.0;
    m.loss_scale = r[k_rec_scale];
    m.next_loss_scale = r[k_rec_next_scale];
    m.overflow = r[k_rec_overflow] != 0.0f;
    m.skipped = m.overflow && s.scaling.mode != LossScaleMode::None;
    s.step_ms.push_back(m.step_ms);
    s.epoch_loss += m.loss;
    s.epoch_correct += m.accuracy;
    s.epoch_steps += 1;
    s.last_train_loss = m.loss;
    if (m.skipped) {
        s.epoch_skipped += 1;
        s.skipped_total += 1;
        sink.on_event(s.run_index, {RunEvent::Kind::SkippedStep, m.step,
                                    "gradients overflowed (inf/NaN) at loss scale " +
                                        format_scale(m.loss_scale) + "; update skipped"});
    }
    if (m.next_loss_scale != m.loss_scale) {
        const bool up = m.next_loss_scale > m.loss_scale;
        sink.on_event(
            s.run_index,
            {RunEvent::Kind::ScaleChange, m.step,
             "loss scale " + format_scale(m.loss_scale) + " -> " + format_scale(m.next_loss_scale) +
                 (up ? " after " + std::to_string(s.scaling.growth_interval) + " clean steps"
                     : " after an overflow")});
    }
    if (!std::isfinite(m.loss) && s.stop_on_non_finite && s.halted.empty()) {
        // Reported a few steps behind: the steps already queued run, nothing after them.
        s.halted = "loss is " + std::string(std::isnan(m.loss) ? "NaN" : "infinite") + " at step " +
                   std::to_string(m.step) + ": run stopped (stop on non-finite loss)";
        sink.on_event(s.run_index, {RunEvent::Kind::Error, m.step, s.halted});
    }
    if (!std::isfinite(m.loss) && !s.warned_nan && !s.stop_on_non_finite) {
        s.warned_nan = true;
        sink.on_event(s.run_index,
                      {RunEvent::Kind::Warning, m.step,
                       "loss is " + std::string(std::isnan(m.loss) ? "NaN" : "infinite") +
                           " at step " + std::to_string(m.step) +
                           (s.scaling.mode == LossScaleMode::None
                                ? " (no loss scaling: the weights may now be non-finite)"
                                : "")});
    }
    s.last_scale = m.next_loss_scale;
    if (s.fp8) {
        std::vector<RunEvent> jumps;
        s.fp8->read(slot, m, jumps);
        for (const RunEvent& e : jumps) sink.on_event(s.run_index, e);
    }
    sink.on_step(s.run_index, m);
    if (s.numerics && s.sampled[std::size_t(slot)])
        sink.on_numerics(s.run_index, s.numerics->read(slot, m.step, m.loss_scale, m.skipped));
    s.reported = step_index + 1;
}

void TrainingRun::Impl::drain(MetricsSink& sink, std::int64_t up_to)
{
    while (reported < up_to) report(sink, reported);
}

void TrainingRun::Impl::evaluate(MetricsSink& sink, int epoch_number)
{
    Impl& s = *this;
    const Dataset& host = s.data.host;
    const auto eval_started = Clock::now();
    const double seconds = std::chrono::duration<double>(Clock::now() - s.epoch_started).count();
    EpochMetrics e;
    e.epoch = epoch_number;
    e.train_loss = s.epoch_steps ? float(s.epoch_loss / double(s.epoch_steps)) : 0.0f;
    e.train_accuracy = s.epoch_steps ? float(s.epoch_correct / double(s.epoch_steps)) : 0.0f;
    e.skipped_steps = s.epoch_skipped;
    e.seconds = seconds;
    e.lr = s.opt.lr;
    if (s.lm) {
        e.language_model = true;
        float loss = 0, accuracy = 0;
        if (!host.text->valid.empty()) {
            if (!s.evaluate_text(s.data.valid_tokens, std::int64_t(host.text->valid.size()), loss,
                                 accuracy))
                return;
            e.valid_loss = loss;
            e.valid_accuracy = accuracy;
            s.last_valid_loss = loss;
        }
        if (!s.evaluate_text(s.data.test_tokens, std::int64_t(host.text->test.size()), loss,
                             accuracy))
            return;
        e.test_loss = loss;
        e.test_accuracy = accuracy;
        s.last_test_loss = loss;
        s.last_test_accuracy = accuracy;
    } else if (host.test.n > 0) {
        s.backend.fill(s.eval_record, 0.0f);
        // A stopped run reports no half-evaluated epoch; finish() evaluates nothing.
        if (!s.forward_test_split(s.stop, [&](std::int64_t, int b) {
                s.backend.cross_entropy(s.graph_head, s.net->logits(), s.net->labels(), b,
                                        s.classes, nullptr, nullptr, s.eval_record, 0);
            }))
            return;
        float rec[k_record_fields];
        s.backend.download_f32(s.eval_record, rec, k_record_fields);
        e.test_loss = rec[k_rec_loss_sum] / float(host.test.n);
        e.test_accuracy = rec[k_rec_correct] / float(host.test.n);
        s.last_test_loss = e.test_loss;
        s.last_test_accuracy = e.test_accuracy;
    }
    sink.on_epoch(s.run_index, e);
    if (s.lm) s.schedule_lr(sink, epoch_number);
    s.epoch_loss = s.epoch_correct = 0;
    s.epoch_steps = s.epoch_skipped = 0;
    s.epoch_started = Clock::now();
    s.last_evaluated_step = s.reported;
    s.eval_wall_ms +=
        std::chrono::duration<double, std::milli>(s.epoch_started - eval_started).count();
}

bool TrainingRun::Impl::forward_test_split(const std::stop_token& until,
                                           const std::function<void(std::int64_t, int)>& each)
{
    const std::int64_t n = data.host.test.n;
    const Augmentation none; // evaluation sees the images as they are
    const std::optional<Fp8Batch> quantized = net->fp8_batch(false);
    for (std::int64_t at = 0; at < n; at += batch) {
        if (until.stop_requested()) return false;
        const int b = int(std::min<std::int64_t>(batch, n - at));
        if (quantized)
            backend.gather_batch_fp8(data.test_images, data.test_labels, data.test_order, at, b,
                                     image, data.norm, none, StepCounter{}, *quantized,
                                     net->input(), net->labels());
        else
            backend.gather_batch(data.test_images, data.test_labels, data.test_order, at, b, image,
                                 data.norm, none, StepCounter{}, net->input(), net->labels());
        net->forward(b, false, 0, quantized.has_value());
        each(at, b);
    }
    return true;
}

bool TrainingRun::Impl::evaluate_text(const Buffer& tokens, std::int64_t split_tokens, float& loss,
                                      float& accuracy)
{
    // The split in columns of the training batch (static shapes; the example evaluates
    // at batch 10), full windows only, the state carried from window to window from zero.
    const std::int64_t column = split_tokens / batch;
    const std::int64_t windows = (column - 1) / bptt;
    backend.fill(eval_record, 0.0f);
    net->reset_state();
    for (std::int64_t w = 0; w < windows; ++w) {
        if (stop.stop_requested()) return false;
        backend.gather_tokens(tokens, column, batch, bptt, w * bptt, StepCounter{}, net->input(),
                              net->labels());
        net->forward(batch, false, 0);
        backend.cross_entropy(graph_head, net->logits(), net->labels(), rows_per_step, classes,
                              nullptr, nullptr, eval_record, 0);
    }
    float rec[k_record_fields];
    backend.download_f32(eval_record, rec, k_record_fields);
    const double n = double(windows) * double(rows_per_step);
    loss = float(rec[k_rec_loss_sum] / n);
    accuracy = float(rec[k_rec_correct] / n);
    return true;
}

void TrainingRun::Impl::schedule_lr(MetricsSink& sink, int epoch_number)
{
    if (schedule.type != LrSchedule::Plateau || !last_valid_loss) return;
    const float valid = *last_valid_loss;
    if (!best_valid_loss || valid < *best_valid_loss) {
        best_valid_loss = valid;
        return;
    }
    // The example: "Anneal the learning rate if no improvement has been seen in the
    // validation dataset."
    const float before = opt.lr;
    opt.lr = before * schedule.factor;
    graph.reset(); // the rate is recorded into the step: record it again
    numerics_graph.reset();
    std::ostringstream o;
    o << "learning rate " << before << " -> " << opt.lr << " after epoch " << epoch_number
      << ": validation loss " << valid << " did not improve on " << *best_valid_loss;
    sink.on_event(run_index, {RunEvent::Kind::Info, reported, o.str()});
}

void TrainingRun::step(MetricsSink& sink)
{
    Impl& s = *m_impl;
    if (finished()) return;
    const std::int64_t number = s.launched + 1;
    bool evaluating = false;
    try {
        step_unchecked(sink, evaluating);
    } catch (const OutOfMemoryError& e) {
        throw out_of_memory_in(e, m_config,
                               (evaluating ? "evaluating the test split after step " : "at step ") +
                                   std::to_string(number));
    }
}

void TrainingRun::step_unchecked(MetricsSink& sink, bool& evaluating)
{
    Impl& s = *m_impl;
    const Dataset& host = s.data.host;
    const std::int64_t index = s.launched;
    const std::int64_t in_epoch = index % s.steps_per_epoch;
    if (index == s.first_step) {
        s.started = s.epoch_started = Clock::now();
        const DeviceInfo dev = s.backend.info();
        std::ostringstream start;
        start << "training " << (m_graph.name.empty() ? "model" : m_graph.name) << " under "
              << policy_name(m_config.policy) << " on " << dev.name;
        if (dev.backend == BackendKind::Cuda)
            start << " (sm_" << dev.cc_major << dev.cc_minor << ")";
        if (m_config.policy == Policy::MixedFP8)
            start << (dev.backend == BackendKind::Cpu ? ", fp8 emulated" : ", fp8 tensor cores")
                  << " on " << s.net->fp8_tensors() / 3 << " dense layers (amax history "
                  << m_config.fp8.amax_history << ", margin " << m_config.fp8.margin << ")";
        start << ": batch " << s.batch;
        if (s.lm) start << " x bptt " << s.bptt << " tokens";
        start << ", " << s.steps_per_epoch << " steps per epoch, " << s.total_steps
              << " steps; loss scaling " << loss_scale_mode_name(s.scaling.mode);
        if (s.scaling.mode != LossScaleMode::None) start << " from " << format_scale(s.last_scale);
        sink.on_event(s.run_index, {RunEvent::Kind::Info, 0, start.str()});
        for (const auto& line : s.net->describe())
            sink.on_event(s.run_index, {RunEvent::Kind::Info, 0, line});
        for (const auto& w : m_graph.warnings)
            sink.on_event(s.run_index, {RunEvent::Kind::Warning, 0, w});
        if (!s.resumed_from.empty())
            sink.on_event(s.run_index, {RunEvent::Kind::Info, index,
                                        "resumed from checkpoint '" + s.resumed_from +
                                            "' at step " + std::to_string(index) + " (epoch " +
                                            std::to_string(index / s.steps_per_epoch + 1) + ", " +
                                            std::to_string(in_epoch) + " of its " +
                                            std::to_string(s.steps_per_epoch) + " steps done)"});
    }
    if (in_epoch == 0) {
        s.epoch = int(index / s.steps_per_epoch) + 1;
        if (s.lm) {
            // The text is read in order; each epoch starts from a zero state (the
            // example's init_hidden), carried from window to window after that.
            s.net->reset_state();
        } else {
            const auto order = epoch_order(host.train.n, m_config.seed, s.epoch);
            s.backend.upload_raw(s.order, order.data(), order.size() * sizeof(std::int32_t));
        }
    }

    const int slot = int(index % k_ring);
    const std::size_t rec = std::size_t(slot) * k_record_fields;
    s.launch_wall_ms[std::size_t(slot)] =
        std::chrono::duration<double, std::milli>(Clock::now() - s.started).count();
    const bool profiled = index == s.profile_step;
    if (profiled) s.backend.profiler_window(true);
    s.start_events[std::size_t(slot)]->record();
    // Not while profiling: the profiled steps measure the step as the timed ones ran it.
    s.sampling = s.numerics && !s.marks && s.numerics->due(index);
    s.run_step(sink, m_config, m_graph.head, m_graph.classes);
    s.backend.copy_to_host_async(s.record, 0, k_record_fields, s.host_records + rec);
    if (s.fp8) s.fp8->copy_out(slot);
    if (s.sampling) s.numerics->copy_out(slot);
    s.sampled[std::size_t(slot)] = s.sampling;
    s.sampling = false;
    s.end_events[std::size_t(slot)]->record();
    if (profiled) s.backend.profiler_window(false);
    s.launched = index + 1;

    // Report what is k_lag steps old: finished on the device by now in the common case.
    s.drain(sink, s.launched - k_lag);
    if (in_epoch + 1 == s.steps_per_epoch) {
        s.drain(sink, s.launched);
        evaluating = true;
        s.evaluate(sink, s.epoch);
    }
}

RunSummary TrainingRun::finish(MetricsSink& sink, bool stopped)
{
    Impl& s = *m_impl;
    s.drain(sink, s.launched);
    if (!stopped && s.last_evaluated_step != s.reported && s.reported > 0)
        s.evaluate(sink, s.epoch);
    s.backend.synchronize();
    RunSummary r;
    r.steps = s.reported;
    r.skipped_steps = s.skipped_total;
    r.epochs_done = int(s.reported / s.steps_per_epoch);
    if (!s.step_ms.empty()) {
        const std::size_t skip =
            s.step_ms.size() > std::size_t(k_warmup_steps) ? k_warmup_steps : 0;
        r.mean_step_ms =
            std::accumulate(s.step_ms.begin() + std::ptrdiff_t(skip), s.step_ms.end(), 0.0) /
            double(s.step_ms.size() - skip);
        r.median_step_ms = headline_step_ms(s.step_ms);
    }
    r.final_train_loss = s.last_train_loss;
    r.final_test_loss = s.last_test_loss;
    r.final_test_accuracy = s.last_test_accuracy;
    r.language_model = s.lm;
    r.final_valid_loss = s.last_valid_loss;
    r.final_lr = s.opt.lr;
    r.final_loss_scale = s.last_scale;
    r.wall_seconds = std::chrono::duration<double>(Clock::now() - s.started).count();
    r.stopped = stopped || !s.halted.empty();
    r.halted = s.halted;
    return r;
}

RunSummary train(TrainingRun& run, MetricsSink& sink, std::stop_token stop)
{
    run.set_stop_token(stop);
    while (!run.finished()) {
        if (stop.stop_requested()) return run.finish(sink, true);
        run.step(sink);
    }
    return run.finish(sink, false);
}

} // namespace mixlab
