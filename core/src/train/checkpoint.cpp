// Checkpoints (mixlab/checkpoint.h): TrainingRun::save_checkpoint writes the run's whole
// state, TrainingRun::resume takes it back, read_checkpoint_header gives a front end the
// model and run config before anything is set up. Everything on the device comes and goes
// through the Backend's download_f32/upload_f32/upload_raw (float32 holds every fp16 and
// bf16 value exactly, so the round trip is bit for bit).
//
// What a resumed run needs to go on exactly as the run that wrote the file would have:
//   - the weights, batch norm's statistics and the optimizer state (tensors);
//   - the loss scaler (scale, growth count, optimizer steps: Adam's bias correction);
//   - mixed_fp8's scales and amax histories;
//   - a language model's carried hidden and cell state (a stop mid-epoch);
//   - the step: the batch's position in the epoch, augmentation and dropout draws are
//     counter-based hashes of (seed, step), and the epoch's order is epoch_order(seed,
//     epoch), so the step and the seed are the whole random state;
//   - the plateau schedule's rate and best validation loss, and the epoch's running sums
//     (the epoch's reported train loss then covers the steps before the stop too).
// Floats in the metadata are written as C's hexadecimal floats ("%a"): exact both ways.
#include "mixlab/checkpoint.h"

#include "mixlab/atomic_file.h"
#include "mixlab/error.h"
#include "model/model_weights.h"
#include "model/safetensors.h"
#include "train/trainer_impl.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace mixlab {
namespace {

constexpr std::string_view k_scaler_tensor = "mixlab.loss_scaler";
constexpr std::string_view k_fp8_tensor = "mixlab.fp8_meta";

std::string hex_float(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", v);
    return buf;
}

std::string read_file(const std::string& path, const std::string& what)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError("cannot read " + what + ": " + std::strerror(errno));
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

SafeTensor f32_tensor(std::string name, const std::vector<float>& values,
                      std::vector<std::int64_t> shape)
{
    SafeTensor t{std::move(name), "F32", std::move(shape), {}};
    t.data.resize(values.size() * sizeof(float));
    std::memcpy(t.data.data(), values.data(), t.data.size());
    return t;
}

std::vector<float> download(Backend& backend, const Buffer& b)
{
    std::vector<float> v(b.count());
    backend.download_f32(b, v.data(), v.size());
    return v;
}

// A carried state tensor's name: "mixlab.<layer index>.h_l0".
std::string carried_name(const Network::StateTensor& t)
{
    return "mixlab." + std::to_string(t.layer->index) + "." + t.name;
}

// The file's metadata, read with the key named when it is missing or malformed.
class Metadata {
public:
    Metadata(const std::map<std::string, std::string>& m, std::string what)
        : m_map(m), m_what(std::move(what))
    {}
    const std::string& text(const std::string& key) const
    {
        const auto it = m_map.find(key);
        if (it == m_map.end())
            throw InputError(m_what + ": \"__metadata__\" has no \"" + key +
                             "\" (not a whole checkpoint)");
        return it->second;
    }
    bool has(const std::string& key) const { return m_map.count(key) != 0; }
    std::int64_t integer(const std::string& key) const
    {
        const std::string& t = text(key);
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(t.c_str(), &end, 10);
        if (t.empty() || *end != '\0' || errno != 0 || v < 0) throw bad(key, t);
        return v;
    }
    double real(const std::string& key) const
    {
        const std::string& t = text(key);
        char* end = nullptr;
        const double v = std::strtod(t.c_str(), &end);
        if (t.empty() || *end != '\0') throw bad(key, t);
        return v;
    }
    std::optional<float> optional_real(const std::string& key) const
    {
        if (text(key).empty()) return std::nullopt;
        return float(real(key));
    }

private:
    InputError bad(const std::string& key, const std::string& t) const
    {
        return InputError(m_what + ": \"__metadata__\" \"" + key + "\" is \"" + t +
                          "\", not a number");
    }
    const std::map<std::string, std::string>& m_map;
    std::string m_what;
};

// The file decoded and its format checked: a weights file or another kind is refused
// with what to do instead.
SafetensorsFile decode_checkpoint(std::string_view bytes, const std::string& what)
{
    SafetensorsFile file = decode_safetensors(bytes, what);
    const auto format = file.metadata.find("format");
    if (format == file.metadata.end())
        throw InputError(what + ": \"__metadata__\" has no \"format\": not a MixLab checkpoint");
    if (format->second == k_weights_format)
        throw InputError(what +
                         " is a weights file (mixlab-weights/1), not a checkpoint: it holds no "
                         "optimizer state, loss scaler or data position to resume from; give it "
                         "to --load-weights to start a new run from its weights");
    if (format->second != k_checkpoint_format)
        throw InputError(what + ": \"__metadata__\" \"format\" is \"" + format->second +
                         "\", not \"" + std::string(k_checkpoint_format) + "\"");
    return file;
}

// A tensor the checkpoint must hold: F32 of `count` values, in one of the shapes given.
std::vector<float> f32_values(const SafetensorsFile& file, const std::string& name,
                              std::size_t count, const std::string& what, const std::string& why)
{
    const SafeTensor* t = file.find(name);
    if (!t) throw InputError(what + ": tensor \"" + name + "\" is missing (" + why + ")");
    if (t->dtype != "F32")
        throw InputError(what + ": tensor \"" + name + "\" is " + t->dtype + ", expected F32");
    if (t->data.size() != count * sizeof(float))
        throw InputError(what + ": tensor \"" + name + "\" holds " +
                         std::to_string(t->data.size() / sizeof(float)) + " values, expected " +
                         std::to_string(count) + " (" + why + ")");
    std::vector<float> v(count);
    std::memcpy(v.data(), t->data.data(), t->data.size());
    return v;
}

} // namespace

CheckpointHeader read_checkpoint_header(const std::string& path)
{
    const std::string what = "checkpoint '" + path + "'";
    const std::string bytes = read_file(path, what);
    const SafetensorsFile file = decode_checkpoint(bytes, what);
    const Metadata meta(file.metadata, what);
    CheckpointHeader h;
    try {
        h.model = parse_model_spec(meta.text("model"));
        h.config = parse_run_config(meta.text("run"));
    } catch (const InputError& e) {
        throw InputError(what + ": its model or run config: " + e.what());
    }
    h.step = meta.integer("step");
    h.steps_per_epoch = meta.integer("steps_per_epoch");
    if (h.steps_per_epoch <= 0)
        throw InputError(what + ": \"__metadata__\" \"steps_per_epoch\" is 0");
    return h;
}

void TrainingRun::save_checkpoint(const std::string& path, const ModelSpec& spec)
{
    Impl& s = *m_impl;
    if (s.reported != s.launched)
        throw Error("save_checkpoint: " + std::to_string(s.launched - s.reported) +
                    " steps not reported yet");
    Network& net = *s.net;
    std::vector<SafeTensor> tensors = network_tensors(net, s.launched);
    for (SafeTensor& t : optimizer_tensors(net)) tensors.push_back(std::move(t));
    tensors.push_back(f32_tensor(std::string(k_scaler_tensor), download(s.backend, s.scaler),
                                 {std::int64_t(k_scaler_fields)}));
    if (Buffer* meta = net.fp8_meta())
        tensors.push_back(f32_tensor(
            std::string(k_fp8_tensor), download(s.backend, *meta),
            {std::int64_t(net.fp8_tensors()), std::int64_t(meta->count()) / net.fp8_tensors()}));
    for (const Network::StateTensor& t : net.carried_tensors())
        tensors.push_back(
            f32_tensor(carried_name(t), net.read_state(t), {std::int64_t(t.buffer->count())}));

    std::string fp8_names;
    for (const std::string& n : net.fp8_names()) fp8_names += (fp8_names.empty() ? "" : ",") + n;
    const auto optional = [](const std::optional<float>& v) {
        return v ? hex_float(double(*v)) : std::string();
    };
    const std::map<std::string, std::string> metadata = {
        {"format", std::string(k_checkpoint_format)},
        {"model", model_spec_to_json(spec)},
        {"policy", std::string(policy_name(m_config.policy))},
        {"run", run_config_to_json(m_config)},
        {"step", std::to_string(s.launched)},
        {"steps_per_epoch", std::to_string(s.steps_per_epoch)},
        {"epoch", std::to_string(s.launched / s.steps_per_epoch + 1)},
        {"step_in_epoch", std::to_string(s.launched % s.steps_per_epoch)},
        {"data_order", "epoch_order(seed, epoch): a permutation drawn from the run's seed and "
                       "the epoch; batch position, augmentation and dropout from (seed, step)"},
        {"loss_scaler", "mixlab.loss_scaler: scale, growth count, found inf, optimizer steps"},
        {"fp8_tensors", fp8_names},
        {"lr", hex_float(double(s.opt.lr))},
        {"best_valid_loss", optional(s.best_valid_loss)},
        {"last_valid_loss", optional(s.last_valid_loss)},
        {"evaluated_step", std::to_string(std::max<std::int64_t>(s.last_evaluated_step, 0))},
        {"epoch_loss_sum", hex_float(s.epoch_loss)},
        {"epoch_correct_sum", hex_float(s.epoch_correct)},
        {"epoch_steps", std::to_string(s.epoch_steps)},
        {"epoch_skipped", std::to_string(s.epoch_skipped)},
        {"skipped_total", std::to_string(s.skipped_total)}};
    write_file_atomically(path, encode_safetensors(tensors, metadata));
}

void TrainingRun::resume(const std::string& path)
{
    Impl& s = *m_impl;
    if (s.launched != 0) throw Error("resume: the run has already trained");
    const std::string what = "checkpoint '" + path + "'";
    const std::string bytes = read_file(path, what);
    const SafetensorsFile file = decode_checkpoint(bytes, what);
    const Metadata meta(file.metadata, what);
    Network& net = *s.net;

    // The run it continues: the same policy and the same steps per epoch (data and batch).
    const std::string policy(policy_name(m_config.policy));
    if (meta.text("policy") != policy)
        throw InputError(what + " was written by a " + meta.text("policy") + " run; this run is " +
                         policy);
    const std::int64_t step = meta.integer("step");
    const std::int64_t per_epoch = meta.integer("steps_per_epoch");
    if (per_epoch != s.steps_per_epoch)
        throw InputError(what + ": its run had " + std::to_string(per_epoch) +
                         " steps per epoch, this one has " + std::to_string(s.steps_per_epoch) +
                         " (another dataset or batch size)");
    const float lr = float(meta.real("lr"));
    const auto best = meta.optional_real("best_valid_loss");
    const auto last_valid = meta.optional_real("last_valid_loss");
    const std::int64_t evaluated = meta.integer("evaluated_step");
    const double loss_sum = meta.real("epoch_loss_sum");
    const double correct_sum = meta.real("epoch_correct_sum");
    const std::int64_t epoch_steps = meta.integer("epoch_steps");
    const std::int64_t epoch_skipped = meta.integer("epoch_skipped");
    const std::int64_t skipped_total = meta.integer("skipped_total");

    // Every tensor checked before anything is written.
    PendingLoad load = check_weights(net, file, what, true);
    const std::vector<float> scaler =
        f32_values(file, std::string(k_scaler_tensor), k_scaler_fields, what, "the loss scaler");
    load.names.emplace_back(k_scaler_tensor);
    std::vector<float> fp8;
    if (Buffer* m = net.fp8_meta()) {
        fp8 = f32_values(file, std::string(k_fp8_tensor), m->count(), what,
                         "mixed_fp8's scales: the same fp8 tensors and amax history length");
        load.names.emplace_back(k_fp8_tensor);
    }
    std::vector<std::pair<Network::StateTensor, std::vector<float>>> carried;
    for (const Network::StateTensor& t : net.carried_tensors()) {
        const std::string name = carried_name(t);
        carried.emplace_back(
            t, f32_values(file, name, t.buffer->count(), what, "a language model's carried state"));
        load.names.push_back(name);
    }
    for (const SafeTensor& t : file.tensors)
        if (std::find(load.names.begin(), load.names.end(), t.name) == load.names.end())
            throw InputError(what + ": tensor \"" + t.name +
                             "\" is not in this run (a checkpoint of another model or "
                             "optimizer?)");

    load.apply();
    s.backend.upload_f32(s.scaler, scaler.data(), scaler.size());
    if (Buffer* m = net.fp8_meta()) {
        s.backend.upload_f32(*m, fp8.data(), fp8.size());
        net.refresh_fp8_weights(); // the weights' fp8 copy from the restored scales
    }
    for (const auto& [t, values] : carried) net.write_state(t, values);
    const std::int32_t counter[2] = {std::int32_t(std::uint32_t(std::uint64_t(step))),
                                     std::int32_t(std::uint32_t(std::uint64_t(step) >> 32))};
    s.backend.upload_raw(s.step_counter, counter, sizeof counter);

    s.launched = s.reported = s.first_step = step;
    s.resumed_from = path;
    s.epoch = int((step + s.steps_per_epoch - 1) / s.steps_per_epoch);
    s.last_scale = scaler[k_scale];
    s.opt.lr = lr;
    s.best_valid_loss = best;
    s.last_valid_loss = last_valid;
    s.last_evaluated_step = evaluated;
    s.skipped_total = skipped_total;
    const bool boundary = step % s.steps_per_epoch == 0;
    if (!boundary || evaluated == step) {
        s.epoch_loss = loss_sum;
        s.epoch_correct = correct_sum;
        s.epoch_steps = epoch_steps;
        s.epoch_skipped = epoch_skipped;
    }
    // Mid-epoch, the epoch's order is drawn again (an epoch's first step draws its own).
    if (!boundary && !s.lm) {
        const auto order = epoch_order(s.data.host.train.n, m_config.seed, s.epoch);
        s.backend.upload_raw(s.order, order.data(), order.size() * sizeof(std::int32_t));
    }
    s.graph.reset();
    s.numerics_graph.reset();
}

} // namespace mixlab
