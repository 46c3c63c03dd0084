#!/usr/bin/env python3
"""Loads a `mixlab-cli train --save-weights` file of an MLP into PyTorch.

Reads the safetensors file with struct and json (no safetensors package), builds the
equivalent nn.Sequential from the model spec in its __metadata__ (flatten, dense,
activation, dropout; docs/WEIGHTS.md has the names), loads the tensors with
load_state_dict(strict=True) and prints what it loaded. With --input N it also prints
the logits of N deterministic inputs (torch.manual_seed(0), uniform [0, 1)). With --idx
DIR it evaluates the model on that folder's IDX test set (t10k-*, gzipped or not),
normalised as MixLab does (the training images' mean and standard deviation), and
prints the test accuracy to set beside the one `mixlab-cli train` printed.

Usage: tools/load_weights_torch.py FILE [--input N] [--idx DIR]   Needs torch alone.
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
          "I64": torch.int64, "I32": torch.int32}
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


def build_mlp(spec, tensors):
    """nn.Sequential with module i for layer i; a dense layer's sizes from its tensors."""
    layers = spec["layers"]
    modules = []
    for i, layer in enumerate(layers):
        kind = layer["type"]
        act = layer.get("activation")
        # MixLab folds a final softmax or sigmoid into the loss: its logits are before it.
        last = i == len(layers) - 1
        if last and act in ("softmax", "sigmoid"):
            print(f"layer {i}: the final {act} is the loss's in MixLab; "
                  "the model outputs the logits before it")
            act = None
        if kind == "flatten":
            modules.append(nn.Flatten())
        elif kind == "dense":
            out_features, in_features = tensors[f"{i}.weight"].shape
            modules.append(Dense(in_features, out_features, layer.get("use_bias", True),
                                 activation(act)))
        elif kind == "activation":
            modules.append(activation(act) or nn.Identity())
        elif kind == "dropout":
            modules.append(nn.Dropout(layer.get("rate", 0.0)))
        else:
            sys.exit(f"layer {i} ({kind}): this script builds MLPs only "
                     "(flatten, dense, activation, dropout)")
    return nn.Sequential(*modules)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--input", type=int, default=0,
                        help="print the logits of N inputs of the model's first layer's width")
    parser.add_argument("--idx", metavar="DIR",
                        help="evaluate on DIR's IDX test set (Fashion-MNIST's layout)")
    args = parser.parse_args()

    metadata, tensors = read_safetensors(args.file)
    if metadata.get("format") != "mixlab-weights/1":
        sys.exit(f"{args.file}: __metadata__ format is {metadata.get('format')!r}, "
                 "not 'mixlab-weights/1'")
    spec = json.loads(metadata["model"])
    print(f"model {spec.get('name')!r}, policy {metadata.get('policy')}, "
          f"step {metadata.get('step')}")
    model = build_mlp(spec, tensors)
    model.load_state_dict(tensors, strict=True)
    model.eval()
    for name, t in model.state_dict().items():
        print(f"  {name:24s} {str(list(t.shape)):16s} {t.dtype}  "
              f"mean {t.float().mean().item():+.6f}")
    print(f"loaded {len(tensors)} tensors with strict=True into:\n{model}")
    if args.input:
        first = next(m for m in model if isinstance(m, Dense))
        torch.manual_seed(0)
        x = torch.rand(args.input, first.in_features)
        with torch.no_grad():
            print("logits:", model(x))
    if args.idx:
        torch.backends.cuda.matmul.allow_tf32 = False
        accuracy, n = idx_accuracy(model, args.idx)
        print(f"PyTorch test accuracy on {n} images of {args.idx}: {accuracy:.4f}")


if __name__ == "__main__":
    main()
