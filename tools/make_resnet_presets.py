"""Writes resources/models/resnet{18,34,50,101,152}.json: torchvision's ResNets in the
CIFAR form (3x3 stride-1 stem, no max-pool), in the exact text model_spec_to_json writes,
so the files are canonical (tst_model_spec checks it). Usage: make_resnet_presets.py [DIR]"""
import json
import os
import sys

# name: (block kind, blocks per stage), as in torchvision.models.resnet
RESNETS = {
    "resnet18": ("basic", [2, 2, 2, 2]),
    "resnet34": ("basic", [3, 4, 6, 3]),
    "resnet50": ("bottleneck", [3, 4, 6, 3]),
    "resnet101": ("bottleneck", [3, 4, 23, 3]),
    "resnet152": ("bottleneck", [3, 8, 36, 3]),
}
WIDTHS = [64, 128, 256, 512]
BOTTLENECK_EXPANSION = 4


def conv(filters, kernel, stride=1):
    layer = {"type": "conv2d", "filters": filters, "kernel": kernel}
    if stride != 1:
        layer["stride"] = stride
    if kernel > 1:
        layer["padding"] = "same"
    layer["use_bias"] = False  # batch norm's shift takes the bias's place
    return layer


BN = {"type": "batchnorm"}
RELU = {"type": "activation", "activation": "relu"}


def block(kind, in_channels, width, stride):
    """One residual block and its output channels; the stride sits on the 3x3 conv."""
    if kind == "basic":
        out = width
        body = [conv(width, 3, stride), BN, RELU, conv(width, 3), BN]
    else:
        out = width * BOTTLENECK_EXPANSION
        body = [conv(width, 1), BN, RELU, conv(width, 3, stride), BN, RELU, conv(out, 1), BN]
    layer = {"type": "residual", "activation": "relu", "body": body}
    if stride != 1 or in_channels != out:
        layer["shortcut"] = [conv(out, 1, stride), BN]
    return layer, out


def resnet(name):
    kind, stages = RESNETS[name]
    layers = [conv(64, 3), BN, RELU]
    channels = 64
    for stage, (width, blocks) in enumerate(zip(WIDTHS, stages)):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            layer, channels = block(kind, channels, width, stride)
            layers.append(layer)
    layers += [{"type": "global_avgpool"}, {"type": "dense", "units": "classes"}]
    return {"name": name, "layers": layers}


def layer_text(layer, indent):
    """model_spec.cpp's layer_text: one line per layer, residual lists two spaces deeper."""
    fields = [(k, v) for k, v in layer.items() if k not in ("body", "shortcut")]
    text = "{" + ", ".join(json.dumps(k) + ": " + json.dumps(v) for k, v in fields)
    if layer["type"] != "residual":
        return text + "}"
    inner = indent + "  "
    for key in ("body", "shortcut"):
        if key in layer:
            items = ",\n".join(inner + layer_text(sub, inner) for sub in layer[key])
            text += ", " + json.dumps(key) + ": [\n" + items + "\n" + indent + "]"
    return text + "}"


def spec_text(spec):
    indent = "    "
    layers = ",\n".join(indent + layer_text(l, indent) for l in spec["layers"])
    return ('{\n  "format": "mixlab-model/1",\n  "name": ' + json.dumps(spec["name"]) +
            ',\n  "layers": [\n' + layers + "\n  ]\n}\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "resources", "models")
    for name in RESNETS:
        path = os.path.join(out_dir, name + ".json")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(spec_text(resnet(name)))
        print(path)


if __name__ == "__main__":
    main()
