// The backend descriptor owner and the builders of cudnn_graph.h, in the attribute
// sequences cuDNN's graph API documents (cudnn_graph.h).
#include "backends/cuda/cudnn_graph.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace mixlab::cuda::graph {

namespace {

// A descriptor for the duration of one call, without a name worth reporting.
Descriptor scratch(cudnnBackendDescriptorType_t type)
{
    return Descriptor(type, "a query's result");
}

const char* knob_name(cudnnBackendKnobType_t k)
{
    switch (k) {
    case CUDNN_KNOB_TYPE_SWIZZLE: return "swizzle";
    case CUDNN_KNOB_TYPE_TILE_SIZE: return "tile_size";
    case CUDNN_KNOB_TYPE_EDGE: return "edge";
    case CUDNN_KNOB_TYPE_MULTIPLY: return "multiply";
    case CUDNN_KNOB_TYPE_SPLIT_K_BUF: return "split_k_buf";
    case CUDNN_KNOB_TYPE_TILEK: return "tile_k";
    case CUDNN_KNOB_TYPE_STAGES: return "stages";
    case CUDNN_KNOB_TYPE_REDUCTION_MODE: return "reduction";
    case CUDNN_KNOB_TYPE_SPLIT_K_SLC: return "split_k";
    case CUDNN_KNOB_TYPE_IDX_MODE: return "idx_mode";
    case CUDNN_KNOB_TYPE_SPECFILT: return "specfilt";
    case CUDNN_KNOB_TYPE_KERNEL_CFG: return "kernel_cfg";
    case CUDNN_KNOB_TYPE_WORKSPACE: return "workspace";
    case CUDNN_KNOB_TYPE_TILE_CGA_M: return "cga_m";
    case CUDNN_KNOB_TYPE_TILE_CGA_N: return "cga_n";
    case CUDNN_KNOB_TYPE_BLOCK_SIZE: return "block";
    case CUDNN_KNOB_TYPE_OCCUPANCY: return "occupancy";
    case CUDNN_KNOB_TYPE_ARRAY_SIZE_PER_THREAD: return "per_thread";
    case CUDNN_KNOB_TYPE_SPLIT_COLS: return "split_cols";
    case CUDNN_KNOB_TYPE_TILE_ROWS: return "tile_rows";
    case CUDNN_KNOB_TYPE_TILE_COLS: return "tile_cols";
    case CUDNN_KNOB_TYPE_LOAD_SIZE: return "load";
    case CUDNN_KNOB_TYPE_CTA_COUNT: return "ctas";
    case CUDNN_KNOB_TYPE_STREAM_K: return "stream_k";
    case CUDNN_KNOB_TYPE_SPLIT_P_SLC: return "split_p";
    case CUDNN_KNOB_TYPE_TILE_M: return "tile_m";
    case CUDNN_KNOB_TYPE_TILE_N: return "tile_n";
    case CUDNN_KNOB_TYPE_WARP_SPEC_CFG: return "warp_spec";
    default: break;
    }
    // Knobs the 9.14 runtime still reports under enumerators newer headers deprecate (by
    // value, so that no deprecation warning fires where those warnings are on).
    switch (int(k)) {
    case 43: return "swap_ab"; // CUDNN_KNOB_TYPE_SWAP_AB: not in cuDNN 9.14's headers
    case 0: return "split_k_old";
    case 3: return "use_tex";
    case 5: return "kblock";
    case 6: return "ldga";
    case 7: return "ldgb";
    case 8: return "chunk_k";
    case 9: return "split_h";
    case 10: return "wino_tile";
    case 16: return "cta_split_k";
    case 19: return "sliced";
    case 20: return "split_rs";
    case 21: return "single_buffer";
    case 22: return "ldgc";
    case 26: return "tile_cga";
    case 32: return "c_per_block";
    default: return nullptr;
    }
}

// Appends the configurations one heuristics mode offers. A mode that cannot describe the
// graph (its finalize fails) offers nothing rather than ending the search: the other
// mode may still.
void append_heuristics(const Descriptor& op_graph, cudnnBackendHeurMode_t mode,
                       std::vector<Descriptor>& out)
{
    Descriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "the engine heuristics");
    heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, op_graph);
    heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) return;
    const std::int64_t n =
        heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, nullptr);
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < n; ++i) {
        configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "an engine configuration");
        raw.push_back(configs.back().get());
    }
    const std::int64_t got =
        heur.get(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, raw.data());
    for (std::int64_t i = 0; i < std::min(n, got); ++i) out.push_back(std::move(configs[i]));
}

} // namespace

Descriptor::Descriptor(cudnnBackendDescriptorType_t type, const char* what) : m_what(what)
{
    const cudnnStatus_t st = cudnnBackendCreateDescriptor(type, &m_d);
    if (st != CUDNN_STATUS_SUCCESS) {
        m_d = nullptr;
        fail(st, "cudnnBackendCreateDescriptor", -1);
    }
}

Descriptor& Descriptor::operator=(Descriptor&& o) noexcept
{
    if (this != &o) {
        reset();
        m_d = std::exchange(o.m_d, nullptr);
        m_what = o.m_what;
    }
    return *this;
}

void Descriptor::reset() noexcept
{
    if (!m_d) return;
    const cudnnStatus_t st = cudnnBackendDestroyDescriptor(m_d);
    if (st != CUDNN_STATUS_SUCCESS)
        std::fprintf(stderr, "mixlab: destroying cuDNN's %s failed: %s (ignored)\n", m_what,
                     cudnnGetErrorString(st));
    m_d = nullptr;
}

void Descriptor::fail(cudnnStatus_t st, const char* call, std::int64_t attribute) const
{
    std::string text = std::string(call) + " on " + m_what;
    if (attribute >= 0) text += " (attribute " + std::to_string(attribute) + ")";
    throw_cudnn_error(st, text.c_str(), __FILE__, __LINE__);
}

void Descriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                     std::int64_t count, const void* values)
{
    const cudnnStatus_t st = cudnnBackendSetAttribute(m_d, name, type, count, values);
    if (st != CUDNN_STATUS_SUCCESS) fail(st, "cudnnBackendSetAttribute", std::int64_t(name));
}

void Descriptor::set_int64(cudnnBackendAttributeName_t name, std::int64_t v)
{
    set(name, CUDNN_TYPE_INT64, 1, &v);
}

void Descriptor::set_int64s(cudnnBackendAttributeName_t name, const std::vector<std::int64_t>& v)
{
    set(name, CUDNN_TYPE_INT64, std::int64_t(v.size()), v.data());
}

void Descriptor::set_descriptor(cudnnBackendAttributeName_t name, const Descriptor& d)
{
    const cudnnBackendDescriptor_t raw = d.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

void Descriptor::finalize()
{
    const cudnnStatus_t st = cudnnBackendFinalize(m_d);
    if (st != CUDNN_STATUS_SUCCESS) fail(st, "cudnnBackendFinalize", -1);
}

cudnnStatus_t Descriptor::try_finalize() noexcept { return cudnnBackendFinalize(m_d); }

std::int64_t Descriptor::get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                             std::int64_t capacity, void* out) const
{
    std::int64_t n = 0;
    const cudnnStatus_t st = cudnnBackendGetAttribute(m_d, name, type, capacity, &n, out);
    if (st != CUDNN_STATUS_SUCCESS) fail(st, "cudnnBackendGetAttribute", std::int64_t(name));
    return n;
}

std::int64_t Descriptor::get_int64(cudnnBackendAttributeName_t name) const
{
    std::int64_t v = 0;
    get(name, CUDNN_TYPE_INT64, 1, &v);
    return v;
}

Descriptor make_tensor(std::int64_t uid, cudnnDataType_t type,
                       const std::array<std::int64_t, 4>& dims,
                       const std::array<std::int64_t, 4>& strides, std::int64_t alignment,
                       bool is_virtual)
{
    Descriptor d(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "a convolution tensor");
    d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    d.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    d.set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
    d.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment);
    d.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    d.finalize();
    return d;
}

Descriptor make_convolution(const ConvGeometry& g)
{
    Descriptor d(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "the convolution descriptor");
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    d.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    d.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    d.set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2);
    d.set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {g.pad_h, g.pad_w});
    d.set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {g.pad_h, g.pad_w});
    d.set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {g.stride_h, g.stride_w});
    d.set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, {1, 1});
    d.finalize();
    return d;
}

Descriptor make_conv_operation(ConvOp op, const Descriptor& conv, const Descriptor& x,
                               const Descriptor& w, const Descriptor& y, float alpha, float beta)
{
    switch (op) {
    case ConvOp::Forward: {
        Descriptor d(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                     "the forward convolution operation");
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
        d.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
        d.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
        d.finalize();
        return d;
    }
    case ConvOp::BackwardData: {
        Descriptor d(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                     "the backward-data convolution operation");
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x);
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w);
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y);
        d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv);
        d.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
        d.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
        d.finalize();
        return d;
    }
    case ConvOp::BackwardFilter: break;
    }
    Descriptor d(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                 "the backward-filter convolution operation");
    d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x);
    d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, w);
    d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, y);
    d.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv);
    d.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    d.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    d.finalize();
    return d;
}

Descriptor make_operation_graph(cudnnHandle_t h, const Descriptor& op)
{
    return make_operation_graph(h, std::vector<const Descriptor*>{&op});
}

Descriptor make_operation_graph(cudnnHandle_t h, const std::vector<const Descriptor*>& ops)
{
    Descriptor d(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "an operation graph");
    std::vector<cudnnBackendDescriptor_t> raw;
    for (const Descriptor* op : ops) raw.push_back(op->get());
    d.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::int64_t(raw.size()),
          raw.data());
    // Newer headers mark the handle deprecated in favour of a device-properties
    // descriptor; every cuDNN 9 runtime (9.14 on the H200) still takes the handle.
    d.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    d.finalize();
    return d;
}

namespace {

Descriptor make_pointwise(cudnnPointwiseMode_t mode)
{
    Descriptor d(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "a pointwise descriptor");
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    d.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    d.set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    d.finalize();
    return d;
}

} // namespace

Descriptor make_pointwise_operation(cudnnPointwiseMode_t mode, const Descriptor& x,
                                    const Descriptor* b, const Descriptor& y)
{
    const Descriptor pw = make_pointwise(mode);
    Descriptor d(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "a pointwise operation");
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b) d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    d.finalize();
    return d;
}

Descriptor make_relu_backward_operation(const Descriptor& dy, const Descriptor& x,
                                        const Descriptor& dx)
{
    const Descriptor pw = make_pointwise(CUDNN_POINTWISE_RELU_BWD);
    Descriptor d(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "a ReLU backward operation");
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, dy);
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    d.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, dx);
    d.finalize();
    return d;
}

Descriptor make_genstats_operation(const Descriptor& x, const Descriptor& sum,
                                   const Descriptor& sqsum)
{
    Descriptor d(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR, "a GenStats operation");
    const cudnnGenStatsMode_t mode = CUDNN_GENSTATS_SUM_SQSUM;
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    d.set(CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &mode);
    d.set(CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    d.set_descriptor(CUDNN_ATTR_OPERATION_GENSTATS_XDESC, x);
    d.set_descriptor(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, sum);
    d.set_descriptor(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, sqsum);
    d.finalize();
    return d;
}

bool EngineConfigInfo::has(cudnnBackendNumericalNote_t n) const
{
    return std::find(numerical_notes.begin(), numerical_notes.end(), n) != numerical_notes.end();
}

bool EngineConfigInfo::has(cudnnBackendBehaviorNote_t n) const
{
    return std::find(behavior_notes.begin(), behavior_notes.end(), n) != behavior_notes.end();
}

std::string EngineConfigInfo::text() const
{
    std::string s = "engine " + std::to_string(engine);
    // The transform it computes in, which changes its rounding (the checks allow for it).
    if (has(CUDNN_NUMERICAL_NOTE_FFT)) s += " (fft)";
    if (has(CUDNN_NUMERICAL_NOTE_WINOGRAD) || has(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4) ||
        has(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6) ||
        has(CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13))
        s += " (winograd)";
    std::string k;
    for (const auto& [type, value] : knobs) {
        if (!k.empty()) k += ' ';
        const char* name = knob_name(type);
        k += (name ? std::string(name) : "knob" + std::to_string(int(type))) + "=" +
             std::to_string(value);
    }
    return k.empty() ? s : s + " [" + k + "]";
}

EngineConfigInfo describe_config(const Descriptor& config)
{
    EngineConfigInfo info;
    Descriptor engine = scratch(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t raw = engine.get();
    config.get(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
    info.engine = engine.get_int64(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);

    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    const std::int64_t n_notes = engine.get(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                            CUDNN_TYPE_NUMERICAL_NOTE, std::size(notes), notes);
    info.numerical_notes.assign(notes, notes + std::min<std::int64_t>(n_notes, std::size(notes)));
    cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
    const std::int64_t n_behavior = engine.get(
        CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, std::size(behavior), behavior);
    info.behavior_notes.assign(behavior,
                               behavior + std::min<std::int64_t>(n_behavior, std::size(behavior)));

    std::vector<Descriptor> choices;
    std::vector<cudnnBackendDescriptor_t> raw_choices;
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
        choices.push_back(scratch(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
        raw_choices.push_back(choices.back().get());
    }
    const std::int64_t n_choices =
        config.get(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                   std::int64_t(raw_choices.size()), raw_choices.data());
    for (std::int64_t i = 0; i < std::min<std::int64_t>(n_choices, std::int64_t(choices.size()));
         ++i) {
        cudnnBackendKnobType_t type{};
        choices[std::size_t(i)].get(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                    &type);
        info.knobs.emplace_back(
            type, choices[std::size_t(i)].get_int64(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE));
    }
    std::sort(info.knobs.begin(), info.knobs.end());
    return info;
}

std::vector<Descriptor> engine_configs(const Descriptor& op_graph)
{
    std::vector<Descriptor> all;
    append_heuristics(op_graph, CUDNN_HEUR_MODE_A, all);
    append_heuristics(op_graph, CUDNN_HEUR_MODE_FALLBACK, all);
    // The fallback mode repeats some of mode A's offers: keep the first of each.
    std::vector<Descriptor> out;
    std::vector<
        std::pair<std::int64_t, std::vector<std::pair<cudnnBackendKnobType_t, std::int64_t>>>>
        seen;
    for (Descriptor& c : all) {
        EngineConfigInfo info = describe_config(c);
        auto key = std::make_pair(info.engine, std::move(info.knobs));
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(std::move(key));
        out.push_back(std::move(c));
    }
    return out;
}

Descriptor try_make_plan(cudnnHandle_t h, const Descriptor& config)
{
    Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "an execution plan");
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h); // as for the graph
    plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    if (plan.try_finalize() != CUDNN_STATUS_SUCCESS) return Descriptor();
    return plan;
}

std::size_t workspace_bytes(const Descriptor& plan)
{
    return std::size_t(plan.get_int64(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE));
}

Descriptor make_variant_pack(const std::int64_t* uids, void* const* pointers, int n,
                             void* workspace)
{
    Descriptor d(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "a convolution's variant pack");
    d.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    d.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers);
    d.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    d.finalize();
    return d;
}

cudnnStatus_t try_execute(cudnnHandle_t h, const Descriptor& plan, const Descriptor& pack) noexcept
{
    return cudnnBackendExecute(h, plan.get(), pack.get());
}

void execute(cudnnHandle_t h, const Descriptor& plan, const Descriptor& pack)
{
    const cudnnStatus_t st = try_execute(h, plan, pack);
    if (st != CUDNN_STATUS_SUCCESS)
        throw_cudnn_error(st, "cudnnBackendExecute of a convolution's execution plan", __FILE__,
                          __LINE__);
}

} // namespace mixlab::cuda::graph
