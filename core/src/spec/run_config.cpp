// The `mixlab-run/1` format: strict parsing (unknown fields are errors naming the field),
// validation of values no run can use, writing, and the small enum name tables.
#include "mixlab/run_config.h"

#include "base/json_util.h"
#include "mixlab/error.h"
#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace mixlab {

using json_util::did_you_mean;
using json_util::join;
using json_util::shown;
using nlohmann::json;
using nlohmann::ordered_json;

std::string_view loss_scale_mode_name(LossScaleMode m)
{
    switch (m) {
    case LossScaleMode::Default: return "default";
    case LossScaleMode::Dynamic: return "dynamic";
    case LossScaleMode::Static: return "static";
    case LossScaleMode::None: return "none";
    }
    return "unknown";
}

std::string_view lr_schedule_name(LrSchedule s)
{
    switch (s) {
    case LrSchedule::Constant: return "constant";
    case LrSchedule::Plateau: return "plateau";
    }
    return "unknown";
}

std::string_view optimizer_name(OptimizerType t)
{
    switch (t) {
    case OptimizerType::SGD: return "sgd";
    case OptimizerType::Adam: return "adam";
    case OptimizerType::AdamW: return "adamw";
    }
    return "unknown";
}

std::string_view master_weights_name(MasterWeights m)
{
    switch (m) {
    case MasterWeights::FP32: return "fp32";
    case MasterWeights::Bf16Split: return "bf16_split";
    }
    return "unknown";
}

bool master_weights_apply(MasterWeights m, Policy policy)
{
    if (m == MasterWeights::FP32) return true;
    // Not mixed_fp8's (yet): its fp8 GEMMs read the bf16 copy, but nothing has tested
    // the split behind them.
    const PolicyTraits t = policy_traits(policy);
    return t.master_weights && t.compute == DType::BF16 && policy != Policy::MixedFP8;
}

RunConfig with_policy(RunConfig base, Policy policy)
{
    base.policy = policy;
    if (!master_weights_apply(base.optimizer.master_weights, policy))
        base.optimizer.master_weights = MasterWeights::FP32;
    return base;
}

std::string_view device_choice_name(DeviceChoice d)
{
    switch (d) {
    case DeviceChoice::Auto: return "auto";
    case DeviceChoice::CPU: return "cpu";
    case DeviceChoice::CUDA: return "cuda";
    }
    return "unknown";
}

namespace {

constexpr int k_max_batch = 1048576;
constexpr int k_max_crop_padding = 64; // pixels of zero padding around a random crop
// A synthetic set is generated in host memory at 3 KiB per image; this cap keeps a typo
// from asking for terabytes.
constexpr std::int64_t k_max_synthetic = 10000000;
// Longer windows than this are not truncated BPTT any more; the LSTM keeps T x batch x
// hidden activations per layer.
constexpr int k_max_bptt = 4096;

const json_util::DocumentKind k_document{"run config", "run config",    k_run_format, "...",
                                         "model spec", "mixlab-model/", false};

std::string lower(std::string_view s)
{
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

// Shortest text that reads back to the same float ("0.01", "nan", "inf").
std::string num(float f)
{
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
    (void)ec;
    return std::string(buf, end);
}

// Whole numbers are written as integers ("init": 65536, not 65536.0), like a user would.
json float_json(float f)
{
    if (std::isfinite(f) && f == std::trunc(f) && std::fabs(f) < 1e15f) return std::int64_t(f);
    return std::strtod(num(f).c_str(), nullptr);
}

// Reads the fields of one JSON object; `prefix` ("optimizer.") makes every message name
// the field the way the user would find it in the file.
class ObjectReader {
public:
    ObjectReader(const json& j, std::string prefix) : m_j(j), m_prefix(std::move(prefix)) {}

    void check_fields(const std::vector<std::string_view>& known) const
    {
        const auto key = json_util::unknown_field(m_j, known);
        if (!key) return;
        std::string where = m_prefix.empty()
                                ? std::string("the run config")
                                : "\"" + m_prefix.substr(0, m_prefix.size() - 1) + "\"";
        throw InputError("unknown field \"" + *key + "\" in " + where + did_you_mean(*key, known) +
                         " (known fields: " + join(known) + ")");
    }
    bool has(const char* key) const { return m_j.contains(key); }
    const json& at(const char* key) const { return m_j.at(key); }
    std::string field(const char* key) const { return "\"" + m_prefix + key + "\""; }

    [[noreturn]] void fail(const char* key, const std::string& want) const
    {
        throw InputError(field(key) + " must be " + want + ", got " + shown(at(key)));
    }

    void read(const char* key, float& out) const
    {
        if (!has(key)) return;
        if (!at(key).is_number()) fail(key, "a number");
        out = float(at(key).get<double>());
    }
    void read(const char* key, std::int64_t& out) const
    {
        if (!has(key)) return;
        const json& v = at(key);
        if (!v.is_number_integer()) fail(key, "an integer");
        if (v.is_number_unsigned() &&
            v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
            fail(key, "a smaller integer");
        out = v.get<std::int64_t>();
    }
    void read(const char* key, int& out) const
    {
        if (!has(key)) return;
        std::int64_t wide = out;
        read(key, wide);
        if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max())
            fail(key, "an integer between " + std::to_string(std::numeric_limits<int>::min()) +
                          " and " + std::to_string(std::numeric_limits<int>::max()));
        out = int(wide);
    }
    void read(const char* key, std::uint64_t& out) const
    {
        if (!has(key)) return;
        const json& v = at(key);
        if (!v.is_number_unsigned()) fail(key, "a non-negative integer");
        out = v.get<std::uint64_t>();
    }
    void read(const char* key, bool& out) const
    {
        if (!has(key)) return;
        if (!at(key).is_boolean()) fail(key, "true or false");
        out = at(key).get<bool>();
    }
    std::string string(const char* key, const std::string& want) const
    {
        if (!at(key).is_string()) fail(key, want);
        return at(key).get<std::string>();
    }
    const json& object(const char* key) const
    {
        if (!at(key).is_object()) fail(key, "an object {...}");
        return at(key);
    }

private:
    const json& m_j;
    std::string m_prefix;
};

void read_dataset(const json& j, DatasetOptions& d)
{
    if (j.is_string()) { // shorthand: "dataset": "fashion-mnist"
        d.name = j.get<std::string>();
        return;
    }
    if (!j.is_object())
        throw InputError("\"dataset\" must be an object like {\"name\": \"fashion-mnist\"}, got " +
                         shown(j));
    ObjectReader r(j, "dataset.");
    r.check_fields({"name", "cifar100_labels", "synthetic_train", "synthetic_test", "augment",
                    "synthetic_text_tokens", "synthetic_text_vocab"});
    if (r.has("name")) d.name = r.string("name", "a dataset name or folder (a string)");
    if (r.has("cifar100_labels")) {
        const auto labels = r.string("cifar100_labels", "\"fine\" or \"coarse\"");
        if (labels == "fine")
            d.cifar100_coarse = false;
        else if (labels == "coarse")
            d.cifar100_coarse = true;
        else
            r.fail("cifar100_labels", "\"fine\" (100 classes) or \"coarse\" (20 superclasses)");
    }
    r.read("synthetic_train", d.synthetic_train);
    r.read("synthetic_test", d.synthetic_test);
    r.read("synthetic_text_tokens", d.synthetic_text_tokens);
    r.read("synthetic_text_vocab", d.synthetic_text_vocab);
    if (r.has("augment")) {
        ObjectReader a(r.object("augment"), "dataset.augment.");
        a.check_fields({"crop_padding", "horizontal_flip"});
        a.read("crop_padding", d.crop_padding);
        a.read("horizontal_flip", d.horizontal_flip);
        if (d.crop_padding < 0 || d.crop_padding > k_max_crop_padding)
            a.fail("crop_padding", "pixels of zero padding for the random crop, 0 (off) to " +
                                       std::to_string(k_max_crop_padding));
    }
}

void read_loss_scale(const json& j, LossScaleConfig& ls)
{
    ObjectReader r(j, "loss_scale.");
    r.check_fields({"mode", "init", "growth_factor", "backoff_factor", "growth_interval"});
    if (r.has("mode")) {
        const std::string want = "\"dynamic\", \"static\" or \"none\"";
        const auto mode = lower(r.string("mode", want));
        if (mode == "dynamic")
            ls.mode = LossScaleMode::Dynamic;
        else if (mode == "static")
            ls.mode = LossScaleMode::Static;
        else if (mode == "none")
            ls.mode = LossScaleMode::None;
        else if (mode == "default")
            ls.mode = LossScaleMode::Default;
        else
            r.fail("mode", want + " (leave it out for the policy's default)");
    }
    r.read("init", ls.init);
    r.read("growth_factor", ls.growth_factor);
    r.read("backoff_factor", ls.backoff_factor);
    r.read("growth_interval", ls.growth_interval);
}

void read_optimizer(const json& j, OptimizerConfig& opt)
{
    ObjectReader r(j, "optimizer.");
    r.check_fields({"type", "lr", "momentum", "nesterov", "weight_decay", "beta1", "beta2", "eps",
                    "clip_norm", "master_weights"});
    if (r.has("type")) {
        const std::string want = "\"sgd\", \"adam\" or \"adamw\"";
        const auto type = lower(r.string("type", want));
        if (type == "sgd")
            opt.type = OptimizerType::SGD;
        else if (type == "adam")
            opt.type = OptimizerType::Adam;
        else if (type == "adamw")
            opt.type = OptimizerType::AdamW;
        else
            r.fail("type", want);
    }
    r.read("lr", opt.lr);
    r.read("momentum", opt.momentum);
    r.read("nesterov", opt.nesterov);
    r.read("weight_decay", opt.weight_decay);
    r.read("beta1", opt.beta1);
    r.read("beta2", opt.beta2);
    r.read("eps", opt.eps);
    r.read("clip_norm", opt.clip_norm);
    if (r.has("master_weights")) {
        const std::string want = "\"fp32\" or \"bf16_split\"";
        const auto m = lower(r.string("master_weights", want));
        if (m == "fp32")
            opt.master_weights = MasterWeights::FP32;
        else if (m == "bf16_split")
            opt.master_weights = MasterWeights::Bf16Split;
        else
            r.fail("master_weights", want);
    }
}

void read_lr_schedule(const json& j, LrScheduleConfig& ls)
{
    ObjectReader r(j, "lr_schedule.");
    r.check_fields({"type", "factor"});
    if (r.has("type")) {
        const std::string want = "\"constant\" or \"plateau\"";
        const auto type = lower(r.string("type", want));
        if (type == "constant")
            ls.type = LrSchedule::Constant;
        else if (type == "plateau")
            ls.type = LrSchedule::Plateau;
        else
            r.fail("type", want);
    }
    r.read("factor", ls.factor);
}

void read_fp8(const json& j, Fp8Config& f)
{
    ObjectReader r(j, "fp8.");
    r.check_fields({"amax_history", "margin", "fast_forward"});
    r.read("amax_history", f.amax_history);
    r.read("margin", f.margin);
    r.read("fast_forward", f.fast_forward);
}

void require(bool ok, const std::string& message)
{
    if (!ok) throw InputError(message);
}

} // namespace

DeviceChoice parse_device_choice(std::string_view s)
{
    const auto key = lower(s);
    if (key == "auto") return DeviceChoice::Auto;
    if (key == "cpu") return DeviceChoice::CPU;
    if (key == "cuda") return DeviceChoice::CUDA;
    throw InputError("unknown device \"" + std::string(s) + "\"; valid devices: auto, cpu, cuda");
}

namespace {

// A run config document, its format checked.
RunConfig read_run_config(const json& doc)
{
    ObjectReader r(doc, "");
    r.check_fields({"format", "dataset", "policy", "loss_scale", "batch_size", "epochs", "steps",
                    "optimizer", "lr_schedule", "bptt", "seed", "device", "cuda_graph",
                    "stop_on_non_finite_loss", "numerics_every", "fp8"});
    RunConfig c;
    if (r.has("dataset")) read_dataset(r.at("dataset"), c.dataset);
    if (r.has("policy")) {
        const auto name = r.string("policy", "a policy name such as \"mixed_fp16\"");
        try {
            c.policy = parse_policy(name);
        } catch (const InputError& e) {
            throw InputError(std::string("\"policy\": ") + e.what());
        }
    }
    if (r.has("loss_scale")) read_loss_scale(r.object("loss_scale"), c.loss_scale);
    r.read("batch_size", c.batch_size);
    r.read("epochs", c.epochs);
    r.read("steps", c.steps);
    if (r.has("optimizer")) read_optimizer(r.object("optimizer"), c.optimizer);
    if (r.has("lr_schedule")) read_lr_schedule(r.object("lr_schedule"), c.lr_schedule);
    if (r.has("fp8")) read_fp8(r.object("fp8"), c.fp8);
    r.read("bptt", c.bptt);
    r.read("seed", c.seed);
    r.read("cuda_graph", c.cuda_graph);
    r.read("stop_on_non_finite_loss", c.stop_on_non_finite_loss);
    r.read("numerics_every", c.numerics_every);
    if (r.has("device")) {
        const auto name = r.string("device", "\"auto\", \"cpu\" or \"cuda\"");
        try {
            c.device = parse_device_choice(name);
        } catch (const InputError& e) {
            throw InputError(std::string("\"device\": ") + e.what());
        }
    }
    validate_run_config(c);
    return c;
}

} // namespace

RunConfig parse_run_config(std::string_view json_text)
{
    return read_run_config(json_util::parse_document(json_text, k_document));
}

RunConfig run_config_from_json(const JsonReader& j)
{
    try {
        json_util::check_document(j.json(), k_document);
        return read_run_config(j.json());
    } catch (const InputError& e) {
        j.fail((j.name().empty() ? std::string() : j.name() + ": ") + e.what());
    }
}

RunConfig load_run_config(const std::string& path)
{
    const std::string text = json_util::read_document_file(path, k_document);
    try {
        return parse_run_config(text);
    } catch (const InputError& e) {
        throw InputError("run config \"" + path + "\": " + e.what());
    }
}

std::string run_config_to_json(const RunConfig& c)
{
    const DatasetOptions defaults;
    ordered_json j;
    j["format"] = std::string(k_run_format);
    ordered_json d;
    d["name"] = c.dataset.name;
    if (c.dataset.cifar100_coarse) d["cifar100_labels"] = "coarse";
    if (c.dataset.synthetic_train != defaults.synthetic_train)
        d["synthetic_train"] = c.dataset.synthetic_train;
    if (c.dataset.synthetic_test != defaults.synthetic_test)
        d["synthetic_test"] = c.dataset.synthetic_test;
    if (c.dataset.synthetic_text_tokens != defaults.synthetic_text_tokens)
        d["synthetic_text_tokens"] = c.dataset.synthetic_text_tokens;
    if (c.dataset.synthetic_text_vocab != defaults.synthetic_text_vocab)
        d["synthetic_text_vocab"] = c.dataset.synthetic_text_vocab;
    if (c.dataset.crop_padding != 0 || c.dataset.horizontal_flip) {
        ordered_json a;
        a["crop_padding"] = c.dataset.crop_padding;
        a["horizontal_flip"] = c.dataset.horizontal_flip;
        d["augment"] = a;
    }
    j["dataset"] = d;
    j["policy"] = std::string(policy_name(c.policy));
    ordered_json ls;
    if (c.loss_scale.mode != LossScaleMode::Default)
        ls["mode"] = std::string(loss_scale_mode_name(c.loss_scale.mode));
    ls["init"] = float_json(c.loss_scale.init);
    ls["growth_factor"] = float_json(c.loss_scale.growth_factor);
    ls["backoff_factor"] = float_json(c.loss_scale.backoff_factor);
    ls["growth_interval"] = c.loss_scale.growth_interval;
    j["loss_scale"] = ls;
    j["batch_size"] = c.batch_size;
    j["epochs"] = c.epochs;
    if (c.steps != 0) j["steps"] = c.steps;
    ordered_json o;
    o["type"] = std::string(optimizer_name(c.optimizer.type));
    o["lr"] = float_json(c.optimizer.lr);
    o["momentum"] = float_json(c.optimizer.momentum);
    o["nesterov"] = c.optimizer.nesterov;
    o["weight_decay"] = float_json(c.optimizer.weight_decay);
    o["beta1"] = float_json(c.optimizer.beta1);
    o["beta2"] = float_json(c.optimizer.beta2);
    o["eps"] = float_json(c.optimizer.eps);
    // Written only when on, so a run without clipping writes what MixLab 0.1.0 wrote.
    if (c.optimizer.clip_norm != 0.0f) o["clip_norm"] = float_json(c.optimizer.clip_norm);
    // Written only when not the default, so configs from before the option read the same.
    if (c.optimizer.master_weights != MasterWeights::FP32)
        o["master_weights"] = std::string(master_weights_name(c.optimizer.master_weights));
    j["optimizer"] = o;
    // Written when they differ from the defaults, so that a classifier's config (which
    // neither affects) reads as it always did; read back, a default is what ran.
    const RunConfig plain;
    if (c.lr_schedule.type != plain.lr_schedule.type ||
        c.lr_schedule.factor != plain.lr_schedule.factor) {
        ordered_json ls2;
        ls2["type"] = std::string(lr_schedule_name(c.lr_schedule.type));
        ls2["factor"] = float_json(c.lr_schedule.factor);
        j["lr_schedule"] = ls2;
    }
    // Written for a mixed_fp8 run (what it ran with) and wherever it was changed.
    if (c.policy == Policy::MixedFP8 || c.fp8 != plain.fp8) {
        ordered_json f;
        f["amax_history"] = c.fp8.amax_history;
        f["margin"] = c.fp8.margin;
        f["fast_forward"] = c.fp8.fast_forward;
        j["fp8"] = f;
    }
    if (c.bptt != plain.bptt) j["bptt"] = c.bptt;
    j["seed"] = c.seed;
    j["device"] = std::string(device_choice_name(c.device));
    j["cuda_graph"] = c.cuda_graph;
    j["stop_on_non_finite_loss"] = c.stop_on_non_finite_loss;
    if (c.numerics_every != 0) j["numerics_every"] = c.numerics_every;
    return j.dump(2) + "\n";
}

void validate_run_config(const RunConfig& c)
{
    const auto& o = c.optimizer;
    const auto& ls = c.loss_scale;
    const auto& d = c.dataset;
    require(c.batch_size >= 1 && c.batch_size <= k_max_batch,
            "\"batch_size\" must be between 1 and " + std::to_string(k_max_batch) + ", got " +
                std::to_string(c.batch_size));
    // Beyond half an image's side a crop is mostly padding; 64 covers any sane image.
    require(d.crop_padding >= 0 && d.crop_padding <= k_max_crop_padding,
            "\"dataset.augment.crop_padding\" must be between 0 (off) and " +
                std::to_string(k_max_crop_padding) + " pixels, got " +
                std::to_string(d.crop_padding));
    require(c.steps >= 0, "\"steps\" must be 0 (train for \"epochs\") or a positive number of "
                          "steps, got " +
                              std::to_string(c.steps));
    require(c.steps > 0 || c.epochs >= 1,
            "\"epochs\" must be at least 1 (or set \"steps\"), got " + std::to_string(c.epochs));
    require(std::isfinite(o.lr) && o.lr > 0,
            "\"optimizer.lr\" must be a positive finite number, got " + num(o.lr));
    require(o.momentum >= 0 && o.momentum < 1,
            "\"optimizer.momentum\" must be in [0, 1), got " + num(o.momentum));
    require(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
            "\"optimizer.weight_decay\" must be a finite number >= 0, got " + num(o.weight_decay));
    require(o.beta1 >= 0 && o.beta1 < 1,
            "\"optimizer.beta1\" must be in [0, 1), got " + num(o.beta1));
    require(o.beta2 >= 0 && o.beta2 < 1,
            "\"optimizer.beta2\" must be in [0, 1), got " + num(o.beta2));
    require(std::isfinite(o.eps) && o.eps > 0,
            "\"optimizer.eps\" must be a positive finite number, got " + num(o.eps));
    require(std::isfinite(o.clip_norm) && o.clip_norm >= 0,
            "\"optimizer.clip_norm\" must be a finite number >= 0 (0: no clipping), got " +
                num(o.clip_norm));
    require(master_weights_apply(o.master_weights, c.policy),
            "\"optimizer.master_weights\": \"" +
                std::string(master_weights_name(o.master_weights)) +
                "\" splits fp32 masters behind bfloat16 weights, so it applies to the "
                "mixed_bf16 policy only; policy \"" +
                std::string(policy_name(c.policy)) + "\" needs \"fp32\" (the default)");
    require(std::isfinite(ls.init) && ls.init > 0,
            "\"loss_scale.init\" must be a positive finite number, got " + num(ls.init));
    require(std::isfinite(ls.growth_factor) && ls.growth_factor > 1,
            "\"loss_scale.growth_factor\" must be a finite number > 1, got " +
                num(ls.growth_factor));
    require(ls.backoff_factor > 0 && ls.backoff_factor < 1,
            "\"loss_scale.backoff_factor\" must be in (0, 1), got " + num(ls.backoff_factor));
    require(ls.growth_interval >= 1, "\"loss_scale.growth_interval\" must be at least 1, got " +
                                         std::to_string(ls.growth_interval));
    require(c.numerics_every >= 0, "\"numerics_every\" must be 0 (off) or a number of steps, got " +
                                       std::to_string(c.numerics_every));
    require(c.bptt >= 1 && c.bptt <= k_max_bptt, "\"bptt\" must be between 1 and " +
                                                     std::to_string(k_max_bptt) +
                                                     " time steps, got " + std::to_string(c.bptt));
    require(std::isfinite(c.lr_schedule.factor) && c.lr_schedule.factor > 0 &&
                c.lr_schedule.factor < 1,
            "\"lr_schedule.factor\" must be in (0, 1), got " + num(c.lr_schedule.factor));
    require(c.fp8.amax_history >= 1 && c.fp8.amax_history <= k_max_fp8_history,
            "\"fp8.amax_history\" must be between 1 and " + std::to_string(k_max_fp8_history) +
                " steps, got " + std::to_string(c.fp8.amax_history));
    require(c.fp8.margin >= -k_max_fp8_margin && c.fp8.margin <= k_max_fp8_margin,
            "\"fp8.margin\" must be an integer between -" + std::to_string(k_max_fp8_margin) +
                " and " + std::to_string(k_max_fp8_margin) +
                " (the scale's power of two of headroom), got " + std::to_string(c.fp8.margin));
    // synthetic-text's sizes are checked where the corpus is made (make_synthetic_text),
    // which names the limits; the spec layer does not reach into the data layer.
    require(d.synthetic_train >= 1 && d.synthetic_train <= k_max_synthetic,
            "\"dataset.synthetic_train\" must be between 1 and " + std::to_string(k_max_synthetic) +
                ", got " + std::to_string(d.synthetic_train));
    require(d.synthetic_test >= 1 && d.synthetic_test <= k_max_synthetic,
            "\"dataset.synthetic_test\" must be between 1 and " + std::to_string(k_max_synthetic) +
                ", got " + std::to_string(d.synthetic_test));
}

// Rounded up rather than down: the split is never empty (validate_run_config asks for at
// least one test sample, and n/5 is 0 below 5) and never under a fifth of the training
// set, so the test accuracy of a small set still rests on its share of samples. The
// default 10000/2000 and every multiple of 5 are exactly N/5 either way.
std::int64_t synthetic_test_size(std::int64_t synthetic_train)
{
    return std::max<std::int64_t>(1, (synthetic_train + 4) / 5);
}

RunConfig with_language_model_defaults(RunConfig c)
{
    c.batch_size = 20;
    c.bptt = 35;
    c.optimizer.type = OptimizerType::SGD;
    c.optimizer.lr = 20.0f;
    c.optimizer.momentum = 0.0f;
    c.optimizer.nesterov = false;
    c.optimizer.weight_decay = 0.0f;
    c.optimizer.clip_norm = 0.25f;
    c.lr_schedule.type = LrSchedule::Plateau;
    c.lr_schedule.factor = 0.25f;
    return c;
}

LossScaleMode effective_loss_scale_mode(const RunConfig& config)
{
    if (config.loss_scale.mode != LossScaleMode::Default) return config.loss_scale.mode;
    return policy_traits(config.policy).default_loss_scaling ? LossScaleMode::Dynamic
                                                             : LossScaleMode::None;
}

} // namespace mixlab
