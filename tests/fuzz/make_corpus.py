#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<name>/): the model presets,
a few run configs, tiny valid IDX and CIFAR files framed as the targets expect
(one flags byte, then the files split by the part marker; see fuzz_idx.cpp and
fuzz_cifar.cpp), safetensors weights for fuzz_safetensors.cpp's network, and small
.keras archives (zips) for fuzz_keras_archive.cpp. The experiment seeds are files the app saved, kept as they are.
Run it again after changing a format; the output is deterministic."""
import gzip
import json
import pathlib
import random
import io
import shutil
import struct
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MARKER = b"%%MIXLAB-PART%%"
rng = random.Random(7)


def write(name, file, data):
    folder = HERE / "corpus" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_bytes(data if isinstance(data, bytes) else data.encode())


def compact(obj):
    return json.dumps(obj, separators=(",", ":"))


def model_specs():
    # The presets, except the deepest ResNets: ResNet-18/34/50 already hold every
    # layer kind those do, and each seed costs fuzzing time.
    for preset in sorted((ROOT / "resources" / "models").glob("*.json")):
        if preset.stem in ("resnet101", "resnet152"):
            continue
        write("model_spec", preset.name, compact(json.loads(preset.read_text())))
    write("model_spec", "every-field.json", compact({
        "format": "mixlab-model/1", "name": "every-field",
        "layers": [
            {"type": "conv2d", "filters": 8, "kernel": [3, 5], "stride": [1, 2],
             "padding": [1, 2], "activation": "relu", "use_bias": False},
            {"type": "batchnorm", "momentum": 0.2, "epsilon": 0.001, "dtype": "float32"},
            {"type": "avgpool2d", "pool_size": 2, "stride": 1, "padding": "valid"},
            {"type": "residual", "activation": "relu",
             "body": [{"type": "conv2d", "filters": 8, "kernel": 3, "padding": "same"},
                      {"type": "residual", "body": [{"type": "activation", "activation": "tanh"}]}],
             "shortcut": [{"type": "maxpool2d", "pool_size": 1}]},
            {"type": "global_avgpool"},
            {"type": "dropout", "rate": 0.25, "name": "drop"},
            {"type": "dense", "units": "classes", "activation": "gelu"},
            {"type": "activation", "activation": "softmax", "dtype": "float32"}]}))


    # Non-ASCII text: messages quote it, and must not cut its characters in two.
    write("model_spec", "unicode.json", json.dumps({
        "format": "mixlab-model/1", "name": "réseau-ü-模型",
        "layers": [{"type": "flatten", "name": "aplatir-é"}, {"type": "dense", "units": "classes"}]},
        ensure_ascii=False))


def keras_models():
    # The Keras files tst_keras_import reads: both generations, Sequential and Functional.
    for model in sorted((ROOT / "tests" / "data" / "keras").glob("*.json")):
        write("keras_import", model.name, compact(json.loads(model.read_text())))
    write("keras_import", "nested-models.keras3.json", compact(keras_nested_model()))


def keras3_tensor(name, node=0):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": [None, 8, 8, 4], "dtype": "float32", "keras_history": [name, node, 0]}}


def keras3_layer(cls, name, config, inputs=None):
    entry = {"module": "keras.layers", "class_name": cls, "config": dict(config, name=name),
             "registered_name": None, "name": name}
    if inputs is not None:
        entry["inbound_nodes"] = [{"args": [keras3_tensor(i) for i in inputs], "kwargs": {}}]
    return entry


def keras_nested_model():
    """Keras 3's JSON of a Functional model using models as layers: a Functional backbone
    (Conv2D, Flatten) and a Sequential block (Dense, Dropout) before its Dense head."""
    backbone = {"name": "backbone", "trainable": True, "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "name": "bin", "inbound_nodes": [],
         "config": {"batch_shape": [None, 8, 8, 4], "dtype": "float32", "name": "bin"}},
        keras3_layer("Conv2D", "conv", {"filters": 4, "kernel_size": [3, 3], "padding": "same",
                                        "activation": "relu"}, ["bin"]),
        keras3_layer("Flatten", "flat", {}, ["conv"])],
        "input_layers": [["bin", 0, 0]], "output_layers": [["flat", 0, 0]]}
    block = {"name": "block", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer",
         "config": {"batch_shape": [None, 256], "dtype": "float32", "name": "block_in"}},
        keras3_layer("Dense", "hidden", {"units": 32, "activation": "relu"}),
        keras3_layer("Dropout", "drop", {"rate": 0.25})]}
    layers = [
        {"module": "keras.layers", "class_name": "InputLayer", "name": "in", "inbound_nodes": [],
         "config": {"batch_shape": [None, 8, 8, 4], "dtype": "float32", "name": "in"}},
        {"module": "keras.src.models.functional", "class_name": "Functional", "name": "backbone",
         "config": backbone, "registered_name": "Functional",
         "inbound_nodes": [{"args": [keras3_tensor("in")], "kwargs": {}}]},
        {"module": "keras", "class_name": "Sequential", "name": "block", "config": block,
         "registered_name": None,
         "inbound_nodes": [{"args": [keras3_tensor("backbone")], "kwargs": {}}]},
        keras3_layer("Dense", "logits", {"units": 10}, ["block"])]
    return {"module": "keras.src.models.functional", "class_name": "Functional",
            "config": {"name": "nested", "trainable": True, "layers": layers,
                       "input_layers": [["in", 0, 0]], "output_layers": [["logits", 0, 0]]},
            "registered_name": "Functional"}


def keras_archive(members, method):
    """A zip of (name, text) members with fixed timestamps, so the bytes are the same."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as z:
        for name, text in members:
            info = zipfile.ZipInfo(name, date_time=(2026, 12, 4, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, text)
    return out.getvalue()


def keras_archives():
    seed = compact(json.loads((ROOT / "tests" / "data" / "keras" / "seed-mlp.keras3.json").read_text()))
    meta = compact({"keras_version": "3.6.0", "date_saved": "2026-12-04@00:00:00"})
    whole = keras_archive([("metadata.json", meta), ("config.json", seed)], zipfile.ZIP_DEFLATED)
    write("keras_archive", "seed-mlp.keras", whole)
    write("keras_archive", "stored.keras", keras_archive([("config.json", seed)], zipfile.ZIP_STORED))
    write("keras_archive", "no-config.keras",
          keras_archive([("metadata.json", meta)], zipfile.ZIP_STORED))
    write("keras_archive", "truncated.keras", whole[: len(whole) // 2])
    write("keras_archive", "nested-models.keras",
          keras_archive([("metadata.json", meta), ("config.json", compact(keras_nested_model()))],
                        zipfile.ZIP_DEFLATED))
    # tf.keras 2.13-2.15's archives: refused by the version metadata.json gives.
    write("keras_archive", "keras-2.13.keras",
          keras_archive([("metadata.json", compact({"keras_version": "2.13.1"})),
                         ("config.json", seed)], zipfile.ZIP_DEFLATED))


def run_configs():
    write("run_config", "minimal.json", '{"format": "mixlab-run/1"}')
    write("run_config", "design-example.json", compact({
        "format": "mixlab-run/1", "dataset": {"name": "fashion-mnist"}, "policy": "mixed_fp16",
        "loss_scale": {"mode": "dynamic", "init": 65536, "growth_factor": 2, "backoff_factor": 0.5,
                       "growth_interval": 2000},
        "batch_size": 256, "epochs": 5, "optimizer": {"type": "sgd", "lr": 0.01, "momentum": 0.9},
        "seed": 42, "device": "auto"}))
    write("run_config", "every-field.json", compact({
        "format": "mixlab-run/1",
        "dataset": {"name": "synthetic", "cifar100_labels": "coarse", "synthetic_train": 512,
                    "synthetic_test": 128, "augment": {"crop_padding": 4, "horizontal_flip": True}},
        "policy": "mixed_bf16", "loss_scale": {"mode": "static", "init": 1024},
        "batch_size": 32, "epochs": 2, "steps": 100,
        "optimizer": {"type": "adamw", "lr": 0.001, "nesterov": True, "weight_decay": 0.01,
                      "beta1": 0.8, "beta2": 0.99, "eps": 1e-7},
        "seed": 18446744073709551615, "device": "cpu", "cuda_graph": False,
        "stop_on_non_finite_loss": True}))
    write("run_config", "unicode.json", json.dumps({
        "format": "mixlab-run/1", "dataset": {"name": "/données/mnist-ü"}}, ensure_ascii=False))
    write("run_config", "shorthand-dataset.json",
          '{"format": "mixlab-run/1", "dataset": "/data/cifar-100", "policy": "fp16", '
          '"loss_scale": {"mode": "none"}, "optimizer": {"type": "adam"}, "device": "cuda"}')


def idx_file(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def idx_set(n_train, n_test, rows, cols, gz):
    files = []
    for n in (n_train, n_test):
        pixels = bytes(rng.randrange(256) for _ in range(n * rows * cols))
        labels = bytes(rng.randrange(10) for _ in range(n))
        files += [idx_file(0x803, (n, rows, cols), pixels), idx_file(0x801, (n,), labels)]
    if gz:
        files = [gzip.compress(f, mtime=0) for f in files]
    flags = 0x0F if gz else 0
    return bytes([flags]) + MARKER.join(files)


def cifar_set(hundred, subfolder, coarse):
    label_ranges = (20, 100) if hundred else (10,)
    n_files = 2 if hundred else 6
    files = []
    for f in range(n_files):
        records = b""
        for _ in range(1 + f % 2):
            records += bytes(rng.randrange(r) for r in label_ranges)
            records += bytes(rng.randrange(256) for _ in range(3072))
        files.append(records)
    flags = (1 if hundred else 0) | (2 if subfolder else 0) | (4 if coarse else 0)
    return bytes([flags]) + MARKER.join(files)


def safetensors(tensors, metadata):
    """A safetensors file: (name, dtype, shape, bytes) in order, header padded to 8."""
    header, at = {"__metadata__": metadata}, 0
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(data)]}
        at += len(data)
    text = compact(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors)


def safetensors_seeds():
    # The fuzz target's network (fuzz_safetensors.cpp): conv 2x1x1, batchnorm, flatten,
    # dense 3 on 2x2x2 samples. A generator of its own: the seeds do not move when the
    # other corpora change.
    r = random.Random(19)

    def f32(n):
        return struct.pack("<%df" % n, *(r.uniform(-1, 1) for _ in range(n)))
    tensors = [("0.weight", "F32", [2, 2, 1, 1], f32(4)), ("0.bias", "F32", [2], f32(2)),
               ("1.weight", "F32", [2], f32(2)), ("1.bias", "F32", [2], f32(2)),
               ("1.running_mean", "F32", [2], f32(2)), ("1.running_var", "F32", [2], f32(2)),
               ("1.num_batches_tracked", "I64", [], struct.pack("<q", 5)),
               ("3.weight", "F32", [3, 8], f32(24)), ("3.bias", "F32", [3], f32(3))]
    meta = {"format": "mixlab-weights/1", "model": "{}", "policy": "fp32", "step": "5"}
    good = safetensors(tensors, meta)
    write("safetensors", "fuzz-net.safetensors", good)
    write("safetensors", "truncated.safetensors", good[:-6])
    write("safetensors", "other-shape.safetensors",
          safetensors(tensors[:7] + [("3.weight", "F32", [3, 4], f32(12))] + tensors[8:], meta))


def main():
    for name in ("model_spec", "run_config", "idx", "cifar", "safetensors", "keras_archive"):
        shutil.rmtree(HERE / "corpus" / name, ignore_errors=True)
    model_specs()
    keras_models()
    run_configs()
    write("idx", "mnist-2x3x4.bin", idx_set(2, 3, 3, 4, False))
    write("idx", "mnist-gz-3x1x28.bin", idx_set(3, 1, 28, 1, True))
    write("cifar", "cifar10.bin", cifar_set(False, False, False))
    write("cifar", "cifar10-subfolder.bin", cifar_set(False, True, False))
    write("cifar", "cifar100-fine.bin", cifar_set(True, False, False))
    write("cifar", "cifar100-coarse-subfolder.bin", cifar_set(True, True, True))
    safetensors_seeds()
    keras_archives()


if __name__ == "__main__":
    main()
