# The engine's source files, folder by folder, named one by one: a file moved or added
# without a line here is not built, and tools/check_build_complete.sh names it (it
# compares the build's compile commands with the tree). Paths are relative to core/src.
# The folders, lowest first; a folder includes only those above it in this list (see
# docs/ARCHITECTURE.md and tools/check_layering.sh).

# base: element types and their rounding, JSON reading and writing, host/device scalar math.
set(MIXLAB_BASE_SOURCES
    base/atomic_file.cpp
    base/dtype.cpp
    base/json_io.cpp
    base/json_util.cpp)
# spec: the documents a user writes: mixlab-model/1, mixlab-run/1, precision policies;
# Keras model JSON read into mixlab-model/1 (keras_import, keras_layers).
set(MIXLAB_SPEC_SOURCES
    spec/keras_archive.cpp
    spec/keras_import.cpp
    spec/keras_layers.cpp
    spec/model_spec.cpp
    spec/policy.cpp
    spec/run_config.cpp)
# data: dataset loaders (IDX, CIFAR, synthetic), uint8 in host memory; word-level text
# corpora (folders, synthetic-text) as int32 token ids, and their bptt batching.
set(MIXLAB_DATA_SOURCES
    data/dataset.cpp
    data/dataset_cifar.cpp
    data/dataset_idx.cpp
    data/dataset_synthetic.cpp
    data/perplexity_references.cpp
    data/synthetic_text.cpp
    data/text_batches.cpp
    data/text_corpus.cpp
    data/text_words.cpp)
# backends: the Backend interface's shared parts and the CPU reference backend; the CUDA
# backend (backends/cuda) is a module of its own, MIXLAB_CUDA_SOURCES.
set(MIXLAB_BACKENDS_SOURCES
    backends/backend.cpp
    backends/backend_validate.cpp
    backends/backend_validate_fp8.cpp
    backends/backend_validate_sequence.cpp
    backends/cuda_module.cpp
    backends/device.cpp
    backends/fault_injection.cpp
    backends/op_names.cpp
    backends/cpu/cpu_activation.cpp
    backends/cpu/cpu_add.cpp
    backends/cpu/cpu_backend.cpp
    backends/cpu/cpu_batchnorm.cpp
    backends/cpu/cpu_conv.cpp
    backends/cpu/cpu_dropout.cpp
    backends/cpu/cpu_embedding.cpp
    backends/cpu/cpu_fp8.cpp
    backends/cpu/cpu_gemm.cpp
    backends/cpu/cpu_loss.cpp
    backends/cpu/cpu_lstm.cpp
    backends/cpu/cpu_numerics.cpp
    backends/cpu/cpu_optimizer.cpp
    backends/cpu/cpu_pool.cpp
    backends/cpu/cpu_sgemm.cpp)
# model: a spec turned into a graph of shaped layers, and the executor of that graph; each
# layer type is a unit of its own under model/layers, listed in model/layers/registry.cpp.
set(MIXLAB_MODEL_SOURCES
    model/fp8_eligibility.cpp
    model/graph.cpp
    model/keras_weights.cpp
    model/master_io.cpp
    model/model_weights.cpp
    model/network.cpp
    model/padded_layout.cpp
    model/safetensors.cpp
    model/node.cpp
    model/layers/activation.cpp
    model/layers/batchnorm.cpp
    model/layers/conv2d.cpp
    model/layers/dense.cpp
    model/layers/dropout.cpp
    model/layers/embedding.cpp
    model/layers/flatten.cpp
    model/layers/layer_rules.cpp
    model/layers/lstm.cpp
    model/layers/pooling.cpp
    model/layers/registry.cpp
    model/layers/residual.cpp
    model/layers/weights.cpp)
# analysis: what the device and a model can do: capabilities, measured ceilings, host
# and device facts, the profile's per-layer costs.
set(MIXLAB_ANALYSIS_SOURCES
    analysis/capabilities.cpp
    analysis/ceilings.cpp
    analysis/environment.cpp
    analysis/layer_costs.cpp
    analysis/numerics.cpp
    analysis/numerics_json.cpp
    analysis/step_profile.cpp)
# train: training runs, the step, its profile, the group that sets up and steps runs in
# lockstep (run_group), the max-batch search, step times.
set(MIXLAB_TRAIN_SOURCES
    train/checkpoint.cpp
    train/checkpoint_folder.cpp
    train/fp8_scales.cpp
    train/max_batch.cpp
    train/max_batch_trial.cpp
    train/metrics_json.cpp
    train/numerics_sampler.cpp
    train/run_group.cpp
    train/step_time.cpp
    train/text_sampling.cpp
    train/trainer.cpp
    train/trainer_predict.cpp
    train/trainer_profile.cpp)
# report: finished runs turned into logs, explanations and the HTML report.
set(MIXLAB_REPORT_SOURCES
    report/explain.cpp
    report/explain_json.cpp
    report/explain_fp8.cpp
    report/explain_numerics.cpp
    report/numerics_summary.cpp
    report/numerics_summary_json.cpp
    report/report_heatmap.cpp
    report/report_html.cpp
    report/report_svg.cpp
    report/run_log.cpp
    report/run_log_read.cpp)
# check: one backend against another, op by op and whole runs (mixlab-cli check).
set(MIXLAB_CHECK_SOURCES
    check/backend_check.cpp
    check/backend_check_fp8.cpp
    check/refusal_check.cpp
    check/step_graph_check.cpp)

set(MIXLAB_CORE_SOURCES
    ${MIXLAB_BASE_SOURCES} ${MIXLAB_SPEC_SOURCES} ${MIXLAB_DATA_SOURCES}
    ${MIXLAB_BACKENDS_SOURCES} ${MIXLAB_MODEL_SOURCES} ${MIXLAB_ANALYSIS_SOURCES}
    ${MIXLAB_TRAIN_SOURCES} ${MIXLAB_REPORT_SOURCES} ${MIXLAB_CHECK_SOURCES})

# backends/cuda: libmixlab_cuda.so, the only part that includes CUDA, cuBLASLt or cuDNN.
set(MIXLAB_CUDA_SOURCES
    backends/cuda/activation.cu
    backends/cuda/add.cu
    backends/cuda/batchnorm.cu
    backends/cuda/bias_grad.cu
    backends/cuda/cast_fill.cu
    backends/cuda/channel_pad.cu
    backends/cuda/conv_channel_pad.cpp
    backends/cuda/conv_cudnn.cpp
    backends/cuda/conv_direct.cu
    backends/cuda/conv_flip.cu
    backends/cuda/conv_graph.cpp
    backends/cuda/conv_nchw.cpp
    backends/cuda/conv_route.cpp
    backends/cuda/cuda_backend.cpp
    backends/cuda/cuda_batchnorm.cpp
    backends/cuda/cuda_check.cpp
    backends/cuda/cuda_conv.cpp
    backends/cuda/cuda_embedding.cpp
    backends/cuda/cuda_event.cpp
    backends/cuda/cuda_factory.cpp
    backends/cuda/cuda_fp8.cpp
    backends/cuda/cuda_layers.cpp
    backends/cuda/cuda_lstm.cpp
    backends/cuda/cuda_optimizer.cpp
    backends/cuda/cuda_pool.cpp
    backends/cuda/cudnn_check.cpp
    backends/cuda/cudnn_graph.cpp
    backends/cuda/dependent_launch.cpp
    backends/cuda/device_memory.cpp
    backends/cuda/dropout.cu
    backends/cuda/embedding.cu
    backends/cuda/fp8.cu
    backends/cuda/gated_timing.cpp
    backends/cuda/gather.cu
    backends/cuda/token_gather.cu
    backends/cuda/gemm_lt.cpp
    backends/cuda/gemm_staging.cpp
    backends/cuda/gemm_tune.cpp
    backends/cuda/layout_transpose.cu
    backends/cuda/loss.cu
    backends/cuda/narrow_gemm.cu
    backends/cuda/numerics.cu
    backends/cuda/cuda_numerics.cpp
    backends/cuda/module_entry.cpp
    backends/cuda/optimizer.cu
    backends/cuda/pool.cu
    backends/cuda/reduce_scratch.cpp
    backends/cuda/skinny_gemm.cu
    backends/cuda/step_graph.cpp)
