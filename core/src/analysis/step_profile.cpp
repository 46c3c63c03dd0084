// StepProfile's phase names and its JSON form (experiment files, `mixlab-cli explain
// --json`): written and read here, once.
#include "mixlab/step_profile.h"

#include "mixlab/json_io.h"

#include <nlohmann/json.hpp>

namespace mixlab {

std::string_view step_phase_name(StepPhase p)
{
    switch (p) {
    case StepPhase::Input: return "input";
    case StepPhase::Forward: return "forward";
    case StepPhase::Loss: return "loss";
    case StepPhase::Backward: return "backward";
    case StepPhase::LossScaling: return "loss scaling";
    case StepPhase::Optimizer: return "optimizer";
    case StepPhase::Count: break;
    }
    return "?";
}

nlohmann::ordered_json layer_time_to_json(const LayerTime& l)
{
    nlohmann::ordered_json j;
    j["path"] = l.path;
    j["type"] = l.type;
    j["forward_ms"] = json_number(l.forward_ms);
    j["backward_ms"] = json_number(l.backward_ms);
    j["flops"] = json_number(l.flops);
    j["bytes_estimate"] = json_number(l.bytes);
    j["gemm"] = l.is_gemm;
    j["tensor_cores"] = l.tensor_cores;
    j["tensor_core_note"] = l.tensor_core_note;
    return j;
}

LayerTime layer_time_from_json(const JsonReader& j)
{
    j.as_object();
    LayerTime l;
    l.path = j.at("path").string();
    l.type = j.at("type").string();
    l.forward_ms = j.at("forward_ms").number();
    l.backward_ms = j.at("backward_ms").number();
    l.flops = j.at("flops").number();
    l.bytes = j.at("bytes_estimate").number();
    l.is_gemm = j.at("gemm").boolean();
    l.tensor_cores = j.at("tensor_cores").boolean();
    l.tensor_core_note = j.at("tensor_core_note").string();
    return l;
}

nlohmann::ordered_json step_profile_to_json(const StepProfile& p)
{
    nlohmann::ordered_json j;
    j["profiled_steps"] = p.steps;
    j["replayed"] = p.replayed;
    nlohmann::ordered_json phases = nlohmann::ordered_json::object();
    for (int i = 0; i < k_step_phases; ++i) {
        const std::string name(step_phase_name(StepPhase(i)));
        phases[name] = json_number(p.phase_ms[std::size_t(i)]);
    }
    j["phases_ms"] = std::move(phases);
    j["sum_of_phases_ms"] = json_number(p.device_ms);
    j["measured_step_ms"] = json_number(p.step_ms);
    j["wall_ms_per_step"] = json_number(p.wall_ms);
    j["overhead_ms"] = json_number(p.overhead_ms);
    j["gpu_busy_fraction"] = json_number(p.gpu_busy_fraction);
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const LayerTime& l : p.layers) layers.push_back(layer_time_to_json(l));
    j["layers"] = std::move(layers);
    return j;
}

StepProfile step_profile_from_json(const JsonReader& j)
{
    j.as_object();
    StepProfile p;
    p.steps = j.at("profiled_steps").int32();
    p.replayed = j.at("replayed").boolean();
    const JsonReader phases = j.object("phases_ms");
    for (int i = 0; i < k_step_phases; ++i)
        p.phase_ms[std::size_t(i)] = phases.at(step_phase_name(StepPhase(i))).number();
    p.device_ms = j.at("sum_of_phases_ms").number();
    p.step_ms = j.at("measured_step_ms").number();
    p.wall_ms = j.at("wall_ms_per_step").number();
    p.overhead_ms = j.at("overhead_ms").number();
    p.gpu_busy_fraction = j.at("gpu_busy_fraction").number();
    const JsonReader layers = j.array("layers");
    for (std::size_t i = 0; i < layers.size(); ++i)
        p.layers.push_back(layer_time_from_json(layers.element(i, "layer")));
    return p;
}

} // namespace mixlab
