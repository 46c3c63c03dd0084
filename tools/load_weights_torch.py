#!/usr/bin/env python3
"""Loads a `mixlab-cli train --save-weights` file (or a --save-checkpoint file's
weights) into PyTorch.

Reads the safetensors file with struct and json (no safetensors package), builds the
equivalent nn.Sequential from the model spec in its __metadata__ (flatten, dense, conv2d,
batchnorm, pooling, activation, dropout, residual blocks; docs/WEIGHTS.md has the names),
loads the tensors with load_state_dict(strict=True) and prints what it loaded. With
--input N it also prints an MLP's logits of N deterministic inputs (torch.manual_seed(0),
uniform [0, 1)). With --idx DIR it evaluates the model on that folder's IDX test set
(t10k-*, gzipped or not), normalised as MixLab does, and prints the test accuracy. With
--predictions FILE (what `train --save-predictions` wrote in the same run) it runs the
file's test images through the model in float64 and compares the logits with MixLab's:
PASS or FAIL by a tolerance that depends on the run's policy, exit 1 on FAIL.

Usage: tools/load_weights_torch.py FILE [--input N] [--idx DIR] [--predictions FILE]
Needs torch alone.
"""
import gzip
import os
import argparse
import json
import struct
import sys

import torch
from torch import nn

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8}
# MixLab's gelu is the tanh approximation (core/src/base/hd_math.h).
ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh,
               "gelu": lambda: nn.GELU(approximate="tanh"), "softmax": lambda: nn.Softmax(-1)}


def read_safetensors(path):
    """The header's metadata and a dict name -> tensor, as the format lays them out."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        sys.exit(f"{path}: the header length {n} runs past the end of the file")
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    start = 8 + n
    tensors = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        if start + end > len(data):
            sys.exit(f"{path}: tensor {name} ends at byte offset {start + end}, "
                     f"the file at {len(data)}")
        raw = bytearray(data[start + begin:start + end])  # writable: frombuffer warns otherwise
        dtype = DTYPES[t["dtype"]]
        tensors[name] = torch.frombuffer(raw, dtype=dtype).reshape(t["shape"]) \
            if raw else torch.empty(t["shape"], dtype=dtype)
    return metadata, tensors


class Dense(nn.Linear):
    """nn.Linear with the layer's fused activation; its state_dict names stay Linear's."""

    def __init__(self, in_features, out_features, bias, activation):
        super().__init__(in_features, out_features, bias=bias)
        self.activation = activation

    def forward(self, x):
        y = super().forward(x)
        return self.activation(y) if self.activation is not None else y


def activation(name):
    if name in (None, "linear"):
        return None
    if name not in ACTIVATIONS:
        sys.exit(f"activation {name!r} has no PyTorch equivalent here")
    return ACTIVATIONS[name]()


def read_idx(folder, stem):
    """An IDX file's array (uint8), from stem or stem.gz in folder."""
    for name in (stem, stem + ".gz"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with (gzip.open if name.endswith(".gz") else open)(path, "rb") as f:
                data = f.read()
            dims = data[3]
            shape = struct.unpack(f">{dims}I", data[4:4 + 4 * dims])
            raw = bytearray(data[4 + 4 * dims:])
            return torch.frombuffer(raw, dtype=torch.uint8).reshape(shape)
    sys.exit(f"{folder}: no {stem} (or {stem}.gz)")


def idx_accuracy(model, folder):
    """Test accuracy on an IDX folder, inputs normalised by the training set's statistics
    (one channel: MixLab's per-channel mean and standard deviation)."""
    train = read_idx(folder, "train-images-idx3-ubyte").double() / 255.0
    mean, std = train.mean().item(), train.std(unbiased=False).item()
    images = read_idx(folder, "t10k-images-idx3-ubyte").float() / 255.0
    labels = read_idx(folder, "t10k-labels-idx1-ubyte").long()
    x = ((images - mean) * (1.0 / max(std, 1e-3))).reshape(len(labels), -1)
    with torch.no_grad():
        predicted = model(x).argmax(dim=1)
    return (predicted == labels).double().mean().item(), len(labels)


class BatchNorm(nn.modules.batchnorm._BatchNorm):
    """MixLab's batchnorm: over channels of an image (N, C, H, W) or features of a vector
    (N, C), as BatchNorm2d / BatchNorm1d, with their state_dict names."""

    def _check_input_dim(self, x):
        if x.dim() not in (2, 4):
            raise ValueError(f"batchnorm on a {x.dim()}-d input")


class Residual(nn.Module):
    """act(body(x) + shortcut(x)); an empty shortcut is the identity (docs/WEIGHTS.md)."""

    def __init__(self, body, shortcut, act):
        super().__init__()
        self.body = body
        self.shortcut = shortcut
        self.act = act

    def forward(self, x):
        y = self.body(x) + (self.shortcut(x) if len(self.shortcut) else x)
        return self.act(y) if self.act is not None else y


class Conv(nn.Conv2d):
    """nn.Conv2d with the layer's fused activation; its state_dict names stay Conv2d's."""

    def __init__(self, *args, activation=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.activation = activation

    def forward(self, x):
        y = super().forward(x)
        return self.activation(y) if self.activation is not None else y


def pair(v, default):
    if v is None:
        return (default, default)
    return tuple(v) if isinstance(v, list) else (v, v)


def window_padding(layer, size):
    """MixLab's "valid" (0), "same" (odd windows: half the window on both sides) or numbers."""
    p = layer.get("padding", "valid")
    if p == "valid":
        return (0, 0)
    if p == "same":
        return (size[0] // 2, size[1] // 2)
    return pair(p, 0)


def build(layers, tensors, prefix, last_layers):
    """nn.Sequential with module i for layer i, sizes taken from the file's tensors."""
    modules = []
    for i, layer in enumerate(layers):
        kind = layer["type"]
        name = f"{prefix}{i}"
        act = layer.get("activation")
        # MixLab folds a final softmax or sigmoid into the loss: its logits are before it.
        if last_layers and i == len(layers) - 1 and act in ("softmax", "sigmoid"):
            print(f"layer {name}: the final {act} is the loss's in MixLab; "
                  "the model outputs the logits before it")
            act = None
        if kind == "flatten":
            modules.append(nn.Flatten())
        elif kind == "dense":
            out_features, in_features = tensors[f"{name}.weight"].shape
            modules.append(Dense(in_features, out_features, layer.get("use_bias", True),
                                 activation(act)))
        elif kind == "conv2d":
            filters, channels, kh, kw = tensors[f"{name}.weight"].shape
            modules.append(Conv(channels, filters, (kh, kw), stride=pair(layer.get("stride"), 1),
                                padding=window_padding(layer, (kh, kw)),
                                bias=layer.get("use_bias", True), activation=activation(act)))
        elif kind == "batchnorm":
            (channels,) = tensors[f"{name}.weight"].shape
            modules.append(BatchNorm(channels, eps=layer.get("epsilon", 1e-5),
                                     momentum=layer.get("momentum", 0.1)))
        elif kind in ("maxpool2d", "avgpool2d"):
            size = pair(layer.get("pool_size"), 2)
            stride = pair(layer.get("stride"), None)
            stride = size if stride[0] is None else stride
            padding = window_padding(layer, size)
            # Padded positions never win a max and are not counted in an average.
            modules.append(nn.MaxPool2d(size, stride, padding) if kind == "maxpool2d" else
                           nn.AvgPool2d(size, stride, padding, count_include_pad=False))
        elif kind == "global_avgpool":
            modules.append(nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()))
        elif kind == "activation":
            modules.append(activation(act) or nn.Identity())
        elif kind == "dropout":
            modules.append(nn.Dropout(layer.get("rate", 0.0)))
        elif kind == "residual":
            body = build(layer["body"], tensors, f"{name}.body.", False)
            shortcut = build(layer.get("shortcut") or [], tensors, f"{name}.shortcut.", False)
            modules.append(Residual(body, shortcut, activation(layer.get("activation"))))
        else:
            sys.exit(f"layer {name} ({kind}): this script builds image classifiers only "
                     "(flatten, dense, conv2d, batchnorm, pooling, activation, dropout, "
                     "residual)")
    return nn.Sequential(*modules)


def floats(text):
    return [float(v) for v in json.loads(text)]


def check_predictions(model, path):
    """MixLab's logits of its test split (train --save-predictions) against this model's,
    computed in float64 from the same images with the same normalisation. Returns whether
    they agree within the policy's tolerance."""
    metadata, tensors = read_safetensors(path)
    if metadata.get("format") != "mixlab-predictions/1":
        sys.exit(f"{path}: __metadata__ format is {metadata.get('format')!r}, "
                 "not 'mixlab-predictions/1'")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    mean = torch.tensor(floats(metadata["normalization_mean"]), dtype=torch.float64)
    inv_std = torch.tensor(floats(metadata["normalization_inv_std"]), dtype=torch.float64)
    images = tensors["images"].to(torch.float64) / 255.0              # N, H, W, C
    x = ((images - mean) * inv_std).permute(0, 3, 1, 2).contiguous()  # N, C, H, W
    theirs = tensors["logits"].to(torch.float64)
    labels = tensors["labels"]
    model = model.to(device=device, dtype=torch.float64)
    ours = []
    with torch.no_grad():
        for at in range(0, len(x), 500):
            ours.append(model(x[at:at + 500].to(device)).cpu())
    ours = torch.cat(ours)
    diff = (ours - theirs).abs()
    scale = theirs.abs().max().item()
    agree = (ours.argmax(1) == theirs.argmax(1)).double().mean().item()
    accuracy = (ours.argmax(1) == labels).double().mean().item()
    policy = metadata.get("policy")
    # fp32 runs should agree to float32's rounding of a deep sum; 16-bit runs compute
    # their activations in bf16/fp16 (8 or 11 significant bits).
    tolerance = 1e-3 if policy == "fp32" else 6e-2
    ok = diff.max().item() <= tolerance * max(1.0, scale)
    print(f"predictions of {path}: {len(x)} test images, policy {policy}, "
          f"step {metadata.get('step')}")
    print(f"  logits: max |MixLab - PyTorch| {diff.max().item():.3e}, mean {diff.mean().item():.3e}, "
          f"largest |logit| {scale:.3f}; tolerance {tolerance:g} x max(1, largest)")
    print(f"  same predicted class: {agree * 100:.2f}% of images")
    print(f"  test accuracy: MixLab {float(metadata.get('accuracy', 'nan')):.4f}, "
          f"PyTorch (float64, {device}) {accuracy:.4f}")
    print("  PASS" if ok else "  FAIL")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--input", type=int, default=0,
                        help="print the logits of N inputs of the model's first layer's width")
    parser.add_argument("--idx", metavar="DIR",
                        help="evaluate on DIR's IDX test set (Fashion-MNIST's layout)")
    parser.add_argument("--predictions", metavar="FILE",
                        help="compare with the logits `train --save-predictions` wrote; "
                        "exit 1 when they differ beyond the tolerance")
    args = parser.parse_args()

    metadata, tensors = read_safetensors(args.file)
    if metadata.get("format") == "mixlab-checkpoint/1":
        # A checkpoint holds the same weight tensors; its optimizer state and run state
        # ("optimizer.*", "mixlab.*") have no place in the model's state_dict.
        tensors = {k: v for k, v in tensors.items()
                   if not k.startswith(("optimizer.", "mixlab."))}
    elif metadata.get("format") != "mixlab-weights/1":
        sys.exit(f"{args.file}: __metadata__ format is {metadata.get('format')!r}, "
                 "not 'mixlab-weights/1' or 'mixlab-checkpoint/1'")
    spec = json.loads(metadata["model"])
    print(f"model {spec.get('name')!r}, policy {metadata.get('policy')}, "
          f"step {metadata.get('step')}")
    model = build(spec["layers"], tensors, "", True)
    model.load_state_dict(tensors, strict=True)
    model.eval()
    for name, t in model.state_dict().items():
        print(f"  {name:24s} {str(list(t.shape)):16s} {t.dtype}  "
              f"mean {t.float().mean().item():+.6f}")
    print(f"loaded {len(tensors)} tensors with strict=True into:\n{model}")
    if args.input:
        first = next((m for m in model if isinstance(m, Dense)), None)
        if first is None or not isinstance(model[0], (nn.Flatten, Dense)):
            sys.exit("--input: for a model that starts with dense layers")
        torch.manual_seed(0)
        x = torch.rand(args.input, first.in_features)
        with torch.no_grad():
            print("logits:", model(x))
    if args.idx:
        torch.backends.cuda.matmul.allow_tf32 = False
        accuracy, n = idx_accuracy(model, args.idx)
        print(f"PyTorch test accuracy on {n} images of {args.idx}: {accuracy:.4f}")
    if args.predictions and not check_predictions(model, args.predictions):
        sys.exit(1)


if __name__ == "__main__":
    main()
