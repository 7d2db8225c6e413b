"""Benchmark models: ResNet-50, BERT-base and 50k nodes built with onnx.helper alone; Llama-shaped
decoders of 32 and 80 layers exported by torch's dynamo exporter from a meta-device module.

    python bench/models.py DIR [NAME ...]   # writes the (named) models into DIR, prints a manifest

Weights are random bytes stored inline, in a real external data file, or external with the data
file absent (counting must never read it). The decoders are exported weights-absent: a meta-device
module has no bytes to write.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17

# Float tensors larger than this go to the external data file, as onnx's own converter does.
EXTERNAL_THRESHOLD_BYTES = 1024


class Weights:
    """Initializers stored inline (random bytes), in an external file, or external but absent."""

    def __init__(self, storage: str, data_file: str):
        assert storage in ("inline", "external", "absent")
        self.storage = storage
        self.data_file = data_file
        self.tensors: list[TensorProto] = []
        self.chunks: list[bytes] = []
        self.offset = 0
        self.rng = np.random.default_rng(0)

    def add(self, name: str, shape: tuple[int, ...], dtype: int = TensorProto.FLOAT) -> str:
        n = math.prod(shape)
        nbytes = helper.tensor_dtype_to_np_dtype(dtype).itemsize * n
        if self.storage == "inline" or nbytes <= EXTERNAL_THRESHOLD_BYTES:
            data = self.rng.standard_normal(n).astype(helper.tensor_dtype_to_np_dtype(dtype))
            self.tensors.append(helper.make_tensor(name, dtype, shape, data.tobytes(), raw=True))
            return name
        t = TensorProto(name=name, dims=shape, data_type=dtype,
                        data_location=TensorProto.EXTERNAL)
        for key, value in (("location", self.data_file), ("offset", str(self.offset)),
                           ("length", str(nbytes))):
            t.external_data.add(key=key, value=value)
        if self.storage == "external":
            self.chunks.append(self.rng.standard_normal(n, dtype=np.float32).tobytes())
        self.offset += nbytes
        self.tensors.append(t)
        return name

    def int64(self, name: str, values: list[int]) -> str:
        self.tensors.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def save_data(self, directory: Path) -> None:
        if self.storage == "external":
            with open(directory / self.data_file, "wb") as f:
                for chunk in self.chunks:
                    f.write(chunk)

    @property
    def params(self) -> int:
        return sum(math.prod(t.dims) for t in self.tensors if t.data_type == TensorProto.FLOAT)


@dataclass
class Builder:
    weights: Weights
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    scope_metadata: bool = False

    def op(self, op_type: str, inputs: list[str], name: str, **attrs) -> str:
        node = helper.make_node(op_type, inputs, [f"{name}_out"], name=name, **attrs)
        if self.scope_metadata:  # what the torch dynamo exporter leaves on every node
            scopes = name.strip("/").split("/")[:-1]
            node.metadata_props.add(key="pkg.torch.onnx.name_scopes",
                                    value=str(scopes + [op_type.lower()]))
        self.nodes.append(node)
        return node.output[0]

    def const(self, name: str, value: float | list[int]) -> str:
        if isinstance(value, list):
            tensor = helper.make_tensor(name, TensorProto.INT64, [len(value)], value)
        else:
            tensor = helper.make_tensor(name, TensorProto.FLOAT, [], [value])
        return self.op("Constant", [], name, value=tensor)

    def model(self, name: str, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.weights.tensors)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                 producer_name="bench")


def resnet50(weights: Weights) -> onnx.ModelProto:
    """torchvision's ResNet-50 as the legacy torch exporter writes it with BatchNorm kept."""
    b = Builder(weights)

    def conv_bn(x: str, c_in: int, c_out: int, k: int, stride: int, scope: str,
                relu: bool = True) -> str:
        w = weights.add(f"{scope}.conv.weight", (c_out, c_in, k, k))
        y = b.op("Conv", [x, w], f"{scope}/conv/Conv", kernel_shape=[k, k],
                 strides=[stride, stride], pads=[k // 2] * 4)
        bn = [weights.add(f"{scope}.bn.{p}", (c_out,))
              for p in ("weight", "bias", "running_mean", "running_var")]
        y = b.op("BatchNormalization", [y, *bn], f"{scope}/bn/BatchNormalization")
        return b.op("Relu", [y], f"{scope}/relu/Relu") if relu else y

    x = conv_bn("input", 3, 64, 7, 2, "/conv1")
    x = b.op("MaxPool", [x], "/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1])
    c_in = 64
    for layer, (width, blocks, stride) in enumerate(
            [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=1):
        for i in range(blocks):
            scope = f"/layer{layer}/layer{layer}.{i}"
            s = stride if i == 0 else 1
            y = conv_bn(x, c_in, width, 1, 1, f"{scope}/1")
            y = conv_bn(y, width, width, 3, s, f"{scope}/2")
            y = conv_bn(y, width, width * 4, 1, 1, f"{scope}/3", relu=False)
            shortcut = conv_bn(x, c_in, width * 4, 1, s, f"{scope}/downsample",
                               relu=False) if i == 0 else x
            y = b.op("Add", [y, shortcut], f"{scope}/Add")
            x = b.op("Relu", [y], f"{scope}/relu/Relu")
            c_in = width * 4
    x = b.op("GlobalAveragePool", [x], "/avgpool/GlobalAveragePool")
    x = b.op("Flatten", [x], "/Flatten", axis=1)
    fc = [weights.add("fc.weight", (1000, 2048)), weights.add("fc.bias", (1000,))]
    b.op("Gemm", [x, *fc], "/fc/Gemm", transB=1)
    b.nodes[-1].output[0] = "output"
    return b.model("resnet50",
                   [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                  ["batch_size", 3, 224, 224])],
                   [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                                  ["batch_size", 1000])])


def bert_base(weights: Weights, layers: int = 12, hidden: int = 768, heads: int = 12,
              vocab: int = 30522) -> onnx.ModelProto:
    """BERT-base decomposed as torch exports it: per-view shape arithmetic, Erf GELU, LayerNorm."""
    b = Builder(weights, scope_metadata=True)
    head = hidden // heads

    def dims_of(x: str, scope: str, tail: list[int]) -> str:
        """Shape(x)[0], Shape(x)[1] and `tail`, concatenated: what `x.view(B, S, *tail)` exports."""
        parts = []
        for axis in (0, 1):
            s = b.op("Shape", [x], f"{scope}/Shape_{axis}")
            g = b.op("Gather", [s, b.const(f"{scope}/Constant_{axis}", [axis])],
                     f"{scope}/Gather_{axis}", axis=0)
            parts.append(g)
        parts.append(b.const(f"{scope}/Constant_tail", tail))
        return b.op("Concat", parts, f"{scope}/Concat", axis=0)

    def linear(x: str, c_in: int, c_out: int, scope: str) -> str:
        w = weights.add(f"{scope}.weight", (c_in, c_out))
        y = b.op("MatMul", [x, w], f"{scope}/MatMul")
        return b.op("Add", [weights.add(f"{scope}.bias", (c_out,)), y], f"{scope}/Add")

    def layer_norm(x: str, scope: str) -> str:
        gamma, beta = weights.add(f"{scope}.weight", (hidden,)), weights.add(f"{scope}.bias",
                                                                             (hidden,))
        return b.op("LayerNormalization", [x, gamma, beta], f"{scope}/LayerNormalization",
                    axis=-1, epsilon=1e-12)

    # Embeddings: word + position (a sliced position_ids buffer) + token type (all zeros).
    ids = "input_ids"
    seq = b.op("Gather", [b.op("Shape", [ids], "/embeddings/Shape"),
                          b.const("/embeddings/Constant", [1])], "/embeddings/Gather", axis=0)
    positions = b.op("Slice", [weights.int64("embeddings.position_ids", list(range(512))),
                               b.const("/embeddings/Constant_1", [0]), seq,
                               b.const("/embeddings/Constant_2", [0])], "/embeddings/Slice")
    positions = b.op("Unsqueeze", [positions, b.const("/embeddings/Constant_3", [0])],
                     "/embeddings/Unsqueeze")
    types = b.op("ConstantOfShape", [b.op("Shape", [ids], "/embeddings/Shape_1")],
                 "/embeddings/ConstantOfShape",
                 value=helper.make_tensor("zero", TensorProto.INT64, [1], [0]))
    x = b.op("Gather", [weights.add("embeddings.word_embeddings.weight", (vocab, hidden)), ids],
             "/embeddings/word_embeddings/Gather")
    for table, rows, index in (("position", 512, positions), ("token_type", 2, types)):
        e = b.op("Gather", [weights.add(f"embeddings.{table}_embeddings.weight", (rows, hidden)),
                            index], f"/embeddings/{table}_embeddings/Gather")
        x = b.op("Add", [x, e], f"/embeddings/Add_{table}")
    x = layer_norm(x, "/embeddings/LayerNorm")

    # Extended attention mask: (1 − mask[:, None, None, :]) · −10000.
    m = b.op("Unsqueeze", ["attention_mask", b.const("/Constant_axes", [1, 2])], "/Unsqueeze")
    m = b.op("Cast", [m], "/Cast", to=TensorProto.FLOAT)
    m = b.op("Sub", [b.const("/Constant_one", 1.0), m], "/Sub")
    mask = b.op("Mul", [m, b.const("/Constant_min", -10000.0)], "/Mul")

    for i in range(layers):
        scope = f"/encoder/layer.{i}"
        att = f"{scope}/attention/self"
        split = {}
        for proj, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]),
                           ("value", [0, 2, 1, 3])):
            y = linear(x, hidden, hidden, f"{att}/{proj}")
            y = b.op("Reshape", [y, dims_of(y, f"{att}/{proj}/view", [heads, head])],
                     f"{att}/{proj}/Reshape")
            split[proj] = b.op("Transpose", [y], f"{att}/{proj}/Transpose", perm=perm)
        s = b.op("MatMul", [split["query"], split["key"]], f"{att}/MatMul")
        s = b.op("Div", [s, b.const(f"{att}/Constant_scale", math.sqrt(head))], f"{att}/Div")
        s = b.op("Add", [s, mask], f"{att}/Add")
        p = b.op("Softmax", [s], f"{att}/Softmax", axis=-1)
        c = b.op("MatMul", [p, split["value"]], f"{att}/MatMul_1")
        c = b.op("Transpose", [c], f"{att}/Transpose", perm=[0, 2, 1, 3])
        c = b.op("Reshape", [c, dims_of(c, f"{att}/merge", [hidden])], f"{att}/Reshape")
        y = linear(c, hidden, hidden, f"{scope}/attention/output/dense")
        y = b.op("Add", [y, x], f"{scope}/attention/output/Add")
        x = layer_norm(y, f"{scope}/attention/output/LayerNorm")
        h = linear(x, hidden, 4 * hidden, f"{scope}/intermediate/dense")
        g = b.op("Div", [h, b.const(f"{scope}/intermediate/Constant", math.sqrt(2.0))],
                 f"{scope}/intermediate/Div")
        g = b.op("Erf", [g], f"{scope}/intermediate/Erf")
        g = b.op("Add", [g, b.const(f"{scope}/intermediate/Constant_1", 1.0)],
                 f"{scope}/intermediate/Add_1")
        g = b.op("Mul", [h, g], f"{scope}/intermediate/Mul")
        g = b.op("Mul", [g, b.const(f"{scope}/intermediate/Constant_2", 0.5)],
                 f"{scope}/intermediate/Mul_1")
        y = linear(g, 4 * hidden, hidden, f"{scope}/output/dense")
        y = b.op("Add", [y, x], f"{scope}/output/Add")
        x = layer_norm(y, f"{scope}/output/LayerNorm")

    first = b.op("Gather", [x, b.const("/pooler/Constant", [0])], "/pooler/Gather", axis=1)
    first = b.op("Squeeze", [first, b.const("/pooler/Constant_1", [1])], "/pooler/Squeeze")
    pooled = b.op("Tanh", [linear(first, hidden, hidden, "/pooler/dense")], "/pooler/Tanh")
    dynamic = ["batch_size", "sequence_length"]
    return b.model("bert_base",
                   [helper.make_tensor_value_info("input_ids", TensorProto.INT64, dynamic),
                    helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dynamic)],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, dynamic + [hidden]),
                    helper.make_tensor_value_info(pooled, TensorProto.FLOAT,
                                                  ["batch_size", hidden])])


def synthetic(weights: Weights, target_nodes: int = 50_000, width: int = 64) -> onnx.ModelProto:
    """Residual blocks of mixed ops (contraction, activations, data movement, reductions) on
    a [batch, 16, width] tensor, with a Softmax and a LayerNormalization every 8th block."""
    b = Builder(weights)
    to_heads = weights.int64("shape_heads", [0, 0, 4, width // 4])
    to_rows = weights.int64("shape_rows", [0, 0, width])
    x, i = "x", 0
    while len(b.nodes) < target_nodes:
        scope = f"/blocks/block.{i}"
        h = b.op("MatMul", [x, weights.add(f"block.{i}.weight", (width, width))],
                 f"{scope}/linear/MatMul")
        h = b.op("Add", [h, weights.add(f"block.{i}.bias", (width,))], f"{scope}/linear/Add")
        h = b.op(("Relu", "Sigmoid", "Tanh")[i % 3], [h], f"{scope}/act/Act")
        h = b.op("Reshape", [h, to_heads], f"{scope}/Reshape")
        h = b.op("Transpose", [h], f"{scope}/Transpose", perm=[0, 2, 1, 3])
        h = b.op("Transpose", [h], f"{scope}/Transpose_1", perm=[0, 2, 1, 3])
        h = b.op("Reshape", [h, to_rows], f"{scope}/Reshape_1")
        h = b.op("Mul", [h, weights.add(f"block.{i}.scale", (width,))], f"{scope}/Mul")
        mu = b.op("ReduceMean", [h], f"{scope}/ReduceMean", axes=[-1], keepdims=1)
        h = b.op("Sub", [h, mu], f"{scope}/Sub")
        if i % 8 == 7:
            h = b.op("Softmax", [h], f"{scope}/Softmax", axis=-1)
            h = b.op("LayerNormalization",
                     [h, weights.add(f"block.{i}.norm.weight", (width,)),
                      weights.add(f"block.{i}.norm.bias", (width,))],
                     f"{scope}/norm/LayerNormalization", axis=-1)
        x = b.op("Add", [h, x], f"{scope}/Add")
        i += 1
    return b.model("synthetic",
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16, width])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", 16, width])])


def llama_decoder(weights: Weights, layers: int) -> onnx.ModelProto:
    """Llama-2-7B's shapes (hidden 4096, 32 heads, MLP 11008) at `layers` layers, exported by
    torch.onnx (dynamo, unoptimized: the optimizer folds constants, which meta tensors lack) from a
    meta-device module; its parameters become initializers whose external data file is absent."""
    import torch

    from onnxflops.converters.common import import_transformers

    transformers = import_transformers()
    LlamaConfig, LlamaForCausalLM = transformers.LlamaConfig, transformers.LlamaForCausalLM

    config = LlamaConfig(num_hidden_layers=layers, hidden_size=4096, intermediate_size=11008,
                         num_attention_heads=32, num_key_value_heads=32, vocab_size=32000,
                         use_cache=False, attn_implementation="sdpa")
    with torch.device("meta"):
        module = LlamaForCausalLM(config).eval()
    ids = torch.ones(1, 128, dtype=torch.long, device="meta")
    program = torch.onnx.export(module, (ids,), dynamo=True, optimize=False, verbose=False)
    initializers = program.model.graph.initializers
    for name, value in initializers.items():
        weights.add(name, tuple(value.shape), value.dtype.value)
    initializers.clear()  # meta tensors: no bytes to serialize
    model = program.model_proto
    model.graph.initializer.extend(weights.tensors)
    return model


# name, builder, weight storage, the --input bindings that count it
CASES = [
    ("resnet50-inline", resnet50, "inline", ["input=1x3x224x224"]),
    ("resnet50-external", resnet50, "external", ["input=1x3x224x224"]),
    ("bert-base", bert_base, "absent", ["input_ids=1x128", "attention_mask=1x128"]),
    ("synthetic-50k", synthetic, "absent", ["x=1x16x64"]),
    ("llama-32-layers", functools.partial(llama_decoder, layers=32), "absent", ["input_ids=1x128"]),
    ("llama-80-layers", functools.partial(llama_decoder, layers=80), "absent", ["input_ids=1x128"]),
]


def build_all(directory: Path, names: list[str] | None = None) -> list[dict]:
    manifest = []
    for name, build, storage, inputs in CASES:
        if names and name not in names:
            continue
        path = directory / f"{name}.onnx"
        weights = Weights(storage, f"{name}.data")
        model = build(weights)
        weights.save_data(directory)
        onnx.save(model, str(path))
        manifest.append({"name": name, "path": str(path), "inputs": inputs,
                         "nodes": len(model.graph.node), "params": weights.params,
                         "inline_weight_bytes": sum(len(t.raw_data) for t in weights.tensors)})
    return manifest


if __name__ == "__main__":
    print(json.dumps(build_all(Path(sys.argv[1]), sys.argv[2:])))
