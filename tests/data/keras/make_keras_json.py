#!/usr/bin/env python3
"""Writes the Keras model JSON files tst_keras_import reads, as Keras 2 (tf.keras 2.13) and
Keras 3 (3.4 and later) write model.to_json(), without Keras installed: the fields, their
order and json.dumps's spacing follow each version's get_config. Run it from this folder.

seed-mlp.keras{2,3}.json: the seed model (resources/models/seed-mlp.json) under
mixed_float16, its final sigmoid kept in float32.
small-resnet.keras{2,3}.json: a Functional model under mixed_bfloat16 with an identity and a
projection residual block, every pooling layer, dropout and a float32 softmax.
"""
import json


# ---- Keras 2 ----

def k2_policy(name):
    if name == "float32":
        return "float32"  # a policy equal to a dtype serializes as the dtype's name
    return {"class_name": "Policy", "config": {"name": name}, "__passive_serialization__": True}


def k2_init(cls, config):
    return {"class_name": cls, "config": config}


def k2_dense_like(config):
    config.update({"kernel_initializer": k2_init("GlorotUniform", {"seed": None}),
                   "bias_initializer": k2_init("Zeros", {}), "kernel_regularizer": None,
                   "bias_regularizer": None, "activity_regularizer": None,
                   "kernel_constraint": None, "bias_constraint": None})
    return config


# ---- Keras 3 ----

def k3_policy(name):
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name},
            "registered_name": None}


def k3_init(cls, config):
    return {"module": "keras.initializers", "class_name": cls, "config": config,
            "registered_name": None}


def k3_dense_like(config):
    config.update({"kernel_initializer": k3_init("GlorotUniform", {"seed": None}),
                   "bias_initializer": k3_init("Zeros", {}), "kernel_regularizer": None,
                   "bias_regularizer": None, "kernel_constraint": None, "bias_constraint": None})
    return config


# ---- layer configs, per generation ----

def layer_config(gen, cls, name, policy, **kw):
    pol = k2_policy(policy) if gen == 2 else k3_policy(policy)
    c = {"name": name, "trainable": True, "dtype": pol}
    dense_like = k2_dense_like if gen == 2 else k3_dense_like
    if cls == "Dense":
        c.update({"units": kw["units"], "activation": kw.get("activation", "linear"),
                  "use_bias": kw.get("use_bias", True)})
        return dense_like(c)
    if cls == "Conv2D":
        c.update({"filters": kw["filters"], "kernel_size": [kw["kernel"]] * 2,
                  "strides": [kw.get("strides", 1)] * 2, "padding": kw.get("padding", "valid"),
                  "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1,
                  "activation": "linear", "use_bias": kw.get("use_bias", True)})
        return dense_like(c)
    if cls == "BatchNormalization":
        c.update({"axis": [3] if gen == 2 else -1, "momentum": 0.99, "epsilon": 0.001,
                  "center": True, "scale": True})
        zeros, ones = ("Zeros", {}), ("Ones", {})
        init = k2_init if gen == 2 else k3_init
        c.update({"beta_initializer": init(*zeros), "gamma_initializer": init(*ones),
                  "moving_mean_initializer": init(*zeros),
                  "moving_variance_initializer": init(*ones), "beta_regularizer": None,
                  "gamma_regularizer": None, "beta_constraint": None, "gamma_constraint": None})
        if gen == 3:
            c["synchronized"] = False
        return c
    if cls in ("MaxPooling2D", "AveragePooling2D"):
        size = kw["pool_size"]
        c.update({"pool_size": [size, size], "padding": "valid",
                  "strides": [kw.get("strides", size)] * 2, "data_format": "channels_last"})
        return c
    if cls == "GlobalAveragePooling2D":
        c.update({"data_format": "channels_last", "keepdims": False})
        return c
    if cls == "Dropout":
        c.update({"rate": kw["rate"], "noise_shape": None, "seed": None})
        return c
    if cls == "Activation":
        c["activation"] = kw["activation"]
        return c
    if cls == "Flatten":
        c["data_format"] = "channels_last"
        return c
    if cls == "Add":
        return c
    raise ValueError(cls)


def write(path, model):
    with open(path, "w") as f:
        f.write(json.dumps(model) + "\n")


# ---- the seed MLP, Sequential ----

def seed(gen):
    mixed = "mixed_float16"
    layers = [
        ("Flatten", "flatten", mixed, {}),
        ("Dense", "dense", mixed, {"units": 3000, "activation": "relu"}),
        ("Dense", "dense_1", mixed, {"units": 1000, "activation": "relu"}),
        ("Dense", "dense_2", mixed, {"units": 10}),
        ("Activation", "activation", "float32", {"activation": "sigmoid"}),
    ]
    if gen == 2:
        out = [{"class_name": "InputLayer",
                "config": {"batch_input_shape": [None, 32, 32, 3], "dtype": "float32",
                           "sparse": False, "ragged": False, "name": "flatten_input"}}]
        for cls, name, pol, kw in layers:
            c = layer_config(2, cls, name, pol, **kw)
            if cls == "Flatten":  # Keras 2 keeps the input shape on the first layer too
                c = {"name": c["name"], "trainable": True, "dtype": c["dtype"],
                     "batch_input_shape": [None, 32, 32, 3], "data_format": "channels_last"}
            out.append({"class_name": cls, "config": c})
        return {"class_name": "Sequential", "config": {"name": "seed-mlp", "layers": out},
                "keras_version": "2.13.1", "backend": "tensorflow"}
    shapes = [[None, 32, 32, 3], [None, 3072], [None, 3000], [None, 1000], [None, 10]]
    out = [{"module": "keras.layers", "class_name": "InputLayer",
            "config": {"batch_shape": [None, 32, 32, 3], "dtype": "float32", "sparse": False,
                       "name": "input_layer"}, "registered_name": None}]
    for (cls, name, pol, kw), shape in zip(layers, shapes):
        out.append({"module": "keras.layers", "class_name": cls,
                    "config": layer_config(3, cls, name, pol, **kw), "registered_name": None,
                    "build_config": {"input_shape": shape}})
    return {"module": "keras", "class_name": "Sequential",
            "config": {"name": "seed-mlp", "trainable": True, "dtype": k3_policy(mixed),
                       "layers": out, "build_input_shape": [None, 32, 32, 3]},
            "registered_name": None, "build_config": {"input_shape": [None, 32, 32, 3]},
            "compile_config": None}


# ---- a small ResNet, Functional ----

def resnet(gen):
    mixed = "mixed_bfloat16"
    # (class, name, inputs, policy, options); the Add of the first block lists its
    # shortcut first in the Keras 3 file, so both orders are read.
    graph = [
        ("InputLayer", "input_1" if gen == 2 else "input_layer", [], None, {}),
        ("Conv2D", "conv", ["@in"], mixed, {"filters": 16, "kernel": 3, "padding": "same",
                                            "use_bias": False}),
        ("BatchNormalization", "bn", ["conv"], mixed, {}),
        ("Activation", "relu", ["bn"], mixed, {"activation": "relu"}),
        ("Conv2D", "c1a", ["relu"], mixed, {"filters": 16, "kernel": 3, "padding": "same",
                                            "use_bias": False}),
        ("BatchNormalization", "b1a", ["c1a"], mixed, {}),
        ("Activation", "r1a", ["b1a"], mixed, {"activation": "relu"}),
        ("Conv2D", "c1b", ["r1a"], mixed, {"filters": 16, "kernel": 3, "padding": "same",
                                           "use_bias": False}),
        ("BatchNormalization", "b1b", ["c1b"], mixed, {}),
        ("Add", "add1", ["b1b", "relu"] if gen == 2 else ["relu", "b1b"], mixed, {}),
        ("Activation", "r1", ["add1"], mixed, {"activation": "relu"}),
        ("Conv2D", "c2a", ["r1"], mixed, {"filters": 32, "kernel": 3, "strides": 2,
                                          "padding": "same", "use_bias": False}),
        ("BatchNormalization", "b2a", ["c2a"], mixed, {}),
        ("Activation", "r2a", ["b2a"], mixed, {"activation": "relu"}),
        ("Conv2D", "c2b", ["r2a"], mixed, {"filters": 32, "kernel": 3, "padding": "same",
                                           "use_bias": False}),
        ("BatchNormalization", "b2b", ["c2b"], mixed, {}),
        ("Conv2D", "c2s", ["r1"], mixed, {"filters": 32, "kernel": 1, "strides": 2,
                                          "use_bias": False}),
        ("BatchNormalization", "b2s", ["c2s"], mixed, {}),
        ("Add", "add2", ["b2b", "b2s"], mixed, {}),
        ("Activation", "r2", ["add2"], mixed, {"activation": "relu"}),
        ("MaxPooling2D", "max_pool", ["r2"], mixed, {"pool_size": 2}),
        ("AveragePooling2D", "avg_pool", ["max_pool"], mixed, {"pool_size": 2, "strides": 1}),
        ("GlobalAveragePooling2D", "gap", ["avg_pool"], mixed, {}),
        ("Dropout", "dropout", ["gap"], mixed, {"rate": 0.2}),
        ("Dense", "logits", ["dropout"], mixed, {"units": 10}),
        ("Activation", "softmax", ["logits"], "float32", {"activation": "softmax"}),
    ]
    input_name = graph[0][1]
    layers = []
    for cls, name, inputs, pol, kw in graph:
        inputs = [input_name if i == "@in" else i for i in inputs]
        if cls == "InputLayer":
            if gen == 2:
                c = {"batch_input_shape": [None, 32, 32, 3], "dtype": "float32",
                     "sparse": False, "ragged": False, "name": name}
                layers.append({"class_name": cls, "config": c, "name": name,
                               "inbound_nodes": []})
            else:
                c = {"batch_shape": [None, 32, 32, 3], "dtype": "float32", "sparse": False,
                     "name": name}
                layers.append({"module": "keras.layers", "class_name": cls, "config": c,
                               "registered_name": None, "name": name, "inbound_nodes": []})
            continue
        c = layer_config(gen, cls, name, pol, **kw)
        if gen == 2:
            node = [[i, 0, 0, {}] for i in inputs]
            layers.append({"class_name": cls, "config": c, "name": name,
                           "inbound_nodes": [node]})
        else:
            tensors = [{"class_name": "__keras_tensor__",
                        "config": {"shape": [None, 32, 32, 16], "dtype": "bfloat16",
                                   "keras_history": [i, 0, 0]}} for i in inputs]
            args = [tensors] if cls == "Add" else tensors
            kwargs = {"training": False} if cls in ("BatchNormalization", "Dropout") else {}
            layers.append({"module": "keras.layers", "class_name": cls, "config": c,
                           "registered_name": None,
                           "build_config": {"input_shape": [None, 32, 32, 16]},
                           "name": name, "inbound_nodes": [{"args": args, "kwargs": kwargs}]})
    config = {"name": "small-resnet", "trainable": True, "layers": layers,
              "input_layers": [[input_name, 0, 0]], "output_layers": [["softmax", 0, 0]]}
    if gen == 2:
        return {"class_name": "Functional", "config": config, "keras_version": "2.13.1",
                "backend": "tensorflow"}
    return {"module": "keras.src.models.functional", "class_name": "Functional",
            "config": config, "registered_name": "Functional",
            "build_config": {"input_shape": None}, "compile_config": None}


if __name__ == "__main__":
    for gen in (2, 3):
        write("seed-mlp.keras%d.json" % gen, seed(gen))
        write("small-resnet.keras%d.json" % gen, resnet(gen))
