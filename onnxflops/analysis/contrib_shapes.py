"""Output shapes of onnxruntime's com.microsoft ops, which ONNX shape inference does not know
(and of the few standard ops it infers no shape for), and of ops of other domains: library ops
torch exports as nodes of their own (a grouped matmul), by a rule where one is known here, else
by the shapes the converter recorded on the node (`onnxflops.shapes`: used only where the node's
inputs have the shapes recorded beside them, and read as untrusted input).

Each op's outputs are derived from its inputs: as the standard op it fuses computes them (a
one-node model of that op, inferred by ONNX), or directly where the rule is plain. The shapes
stage adds them and infers again, until no more of these ops can be resolved.
"""

from __future__ import annotations

import json
from typing import Callable

import onnx
from onnx import TensorProto, helper

from onnxflops.graph import TensorInfo, info_from_value_info, is_standard_domain
from onnxflops.ops import CONTRIB_SHAPE_KEEPING, ONNX_DOMAINS

MS = "com.microsoft"
SHAPES_KEY = "onnxflops.shapes"
_MAX_RECORDED_DIM = 2 ** 40  # a recorded dim beyond this is corrupt, and not believed
_TWIN_OPSET = 17  # attributes as the twins below spell them (axes on ReduceMean, ...)
Shape = tuple
Output = tuple[int, Shape] | None  # (dtype, shape), or None where it stays unknown


def infer_contrib_shapes(model: onnx.ModelProto,
                         infer: Callable[[onnx.ModelProto], onnx.ModelProto]) -> onnx.ModelProto:
    """`model` (already inferred) with the outputs of com.microsoft nodes typed, and inferred again
    from there, round after round while new outputs are found."""
    while True:
        contrib = _contrib_nodes(model)
        if not contrib:
            return model
        known = _known_types(model, {n for node in contrib for n in (*node.input, *node.output)})
        found = []
        for node in contrib:
            if all(o in known for o in node.output if o):
                continue
            inputs = [known.get(i) if i else None for i in node.input]
            if any(i is None for name, i in zip(node.input, inputs) if name):
                continue
            for name, out in zip(node.output, contrib_outputs(node, inputs)):
                if name and out is not None and name not in known:
                    found.append(helper.make_tensor_value_info(name, out[0], out[1]))
        if not found:
            return model
        model.graph.value_info.extend(found)
        model = infer(model)


def _contrib_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    opset = opsets.get("ai.onnx", 0)
    # Field reads cost per node: ask for the domain only where it can matter.
    with_other = any(d not in ONNX_DOMAINS for d in opsets)
    return [node for node in model.graph.node
            if node.op_type in CONTRIB_DEFAULT_DOMAIN and is_standard_domain(node.domain)
            and is_contrib(node.op_type, "", opset)
            or with_other and node.domain not in ONNX_DOMAINS]


def is_contrib(op_type: str, domain: str, opset: int) -> bool:
    """Whether ONNX inference leaves this op's outputs untyped, for the rules here to type."""
    return domain not in ONNX_DOMAINS or not domain \
        and opset < CONTRIB_DEFAULT_DOMAIN.get(op_type, 0)


def _known_types(model: onnx.ModelProto, names: set[str]) -> dict[str, TensorInfo]:
    """The known types of the tensors `names` (only those: a large graph has many)."""
    infos = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        if vi.name not in names:
            continue
        info = info_from_value_info(vi)
        if info.known and info.dtype:
            infos[vi.name] = info
    for t in model.graph.initializer:
        if t.name in names:
            infos[t.name] = TensorInfo(t.name, t.data_type, tuple(t.dims))
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] in names:
            for a in node.attribute:
                if a.name == "value":
                    infos[node.output[0]] = TensorInfo(node.output[0], a.t.data_type,
                                                       tuple(a.t.dims))
    return infos


def contrib_outputs(node: onnx.NodeProto, inputs: list[TensorInfo | None]) -> list[Output]:
    """(dtype, shape) of each output of a node `is_contrib` accepts, from its inputs' types."""
    if node.domain in (MS, "", "ai.onnx"):
        rule = _RULES.get(node.op_type)
    else:
        rule = _OTHER_DOMAIN_RULES.get((node.domain, node.op_type))
        if rule is None:
            return recorded_outputs(node, inputs)
    if rule is None:
        return []
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    try:
        return rule(inputs, attrs)
    except (ValueError, IndexError, KeyError, ZeroDivisionError, AttributeError, TypeError,
            onnx.shape_inference.InferenceError):
        # inputs this rule does not understand (an input it needs left out, named ''): the
        # outputs stay unknown, and the node is reported uncosted
        return []


def recorded_outputs(node: onnx.NodeProto, inputs: list[TensorInfo | None]) -> list[Output]:
    """The output types the converter recorded on `node`, where its inputs have the shapes
    recorded beside them (the same op on the same shapes); else none. A malformed record (not
    JSON, negative or huge dims, an unknown dtype, more outputs than the node has) is ignored."""
    text = next((p.value for p in node.metadata_props if p.key == SHAPES_KEY), None)
    if text is None:
        return []
    try:
        record = json.loads(text)
        given = [_recorded_dims(d) for d in record["inputs"]]
        outputs = [(int(t), _recorded_dims(d)) for t, d in record["outputs"]]
    except (ValueError, TypeError, KeyError):
        return []
    present = [i for name, i in zip(node.input, inputs) if name]
    if len(outputs) > len(node.output) or len(given) != len(present) \
            or any(t not in _DTYPES for t, _ in outputs) \
            or any(i is None or i.shape != dims for i, dims in zip(present, given)):
        return []
    return outputs


def _recorded_dims(dims) -> Shape:
    if not isinstance(dims, list) or len(dims) > 64 or not all(
            type(d) is int and 0 <= d <= _MAX_RECORDED_DIM for d in dims):
        raise ValueError("not a shape")
    return tuple(dims)


_DTYPES = frozenset(v for v in TensorProto.DataType.values() if v)


def twin(op_type: str, inputs: list[TensorInfo | None], **attrs) -> Shape:
    """The shape of output 0 of the standard op over float stand-ins of `inputs`."""
    names = [f"i{k}" if t is not None else "" for k, t in enumerate(inputs)]
    graph_inputs = [helper.make_tensor_value_info(name, _float_or_int(t), t.shape)
                    for name, t in zip(names, inputs) if t is not None]
    graph = helper.make_graph([helper.make_node(op_type, names, ["y"], **attrs)], "twin",
                              graph_inputs, [helper.make_value_info("y", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _TWIN_OPSET)])
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    info = info_from_value_info(inferred.graph.output[0])
    if not info.known:
        raise ValueError("twin output unknown")
    return info.shape


def _float_or_int(t: TensorInfo) -> int:
    return t.dtype if t.dtype in (TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL) \
        else TensorProto.FLOAT


def _to_nchw(t: TensorInfo) -> TensorInfo:
    return TensorInfo(t.name, t.dtype, (t.shape[0], t.shape[-1], *t.shape[1:-1]))


def _to_nhwc(shape: Shape) -> Shape:
    return (shape[0], *shape[2:], shape[1])


def _layout_twin(op_type: str, x: TensorInfo, rest: list, channels_last: bool, **attrs) -> Shape:
    if not channels_last:
        return twin(op_type, [x, *rest], **attrs)
    return _to_nhwc(twin(op_type, [_to_nchw(x), *rest], **attrs))


def _without(attrs: dict, *names: str) -> dict:
    return {k: v for k, v in attrs.items() if k not in names}


def _conv_attrs(attrs: dict) -> dict:
    return {k: v for k, v in attrs.items()
            if k in ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")}


def _same(i, a):
    return [(i[0].dtype, i[0].shape)]


def _fused_conv(i, a):
    return [(i[0].dtype, twin("Conv", i[:3], **_conv_attrs(a)))]


def _nhwc(op_type):
    def rule(i, a):
        return [(i[0].dtype, _layout_twin(op_type, i[0], i[1:3], True, **_conv_attrs(a)))]
    return rule


def _transposed(t: TensorInfo, trans: int, trans_batch: int) -> TensorInfo:
    dims = list(t.shape)
    if trans_batch:
        dims = dims[1:-1] + dims[:1] + dims[-1:]
    if trans:
        dims[-2:] = dims[-1:] + dims[-2:-1]
    return TensorInfo(t.name, t.dtype, tuple(dims))


def _fused_matmul(i, a):
    lhs = _transposed(i[0], a.get("transA", 0), a.get("transBatchA", 0))
    rhs = _transposed(i[1], a.get("transB", 0), a.get("transBatchB", 0))
    return [(i[0].dtype, twin("MatMul", [lhs, rhs]))]


def _gemm_shape(a: TensorInfo, b: TensorInfo, attrs: dict) -> Shape:
    return twin("Gemm", [a, b], transA=attrs.get("transA", 0), transB=attrs.get("transB", 0))


def _fused_gemm(i, a):
    return [(i[0].dtype, _gemm_shape(i[0], i[1], a))]


def _qgemm(i, a):
    if _given(i, 7):  # y_scale: a quantized output, of its zero point's type
        dtype = i[8].dtype if _given(i, 8) else TensorProto.UINT8
    else:
        dtype = TensorProto.FLOAT
    return [(dtype, _gemm_shape(i[0], i[3], a))]


def _given(i: list, slot: int) -> bool:
    return len(i) > slot and i[slot] is not None


def _matmul_to_float(scale_slot):
    def rule(i, a):
        return [(i[scale_slot].dtype, twin("MatMul", i[:2]))]
    return rule


def _matmul_nbits(i, a):
    return [(i[0].dtype, i[0].shape[:-1] + (a["N"],))]


def _gemm_fast_gelu(i, a):
    return [(i[0].dtype, twin("MatMul", i[:2]))]


def _bias_split_gelu(i, a):
    return [(i[0].dtype, i[0].shape[:-1] + (i[0].shape[-1] // 2,))]


def _skip_norm(i, a):
    x = i[0]
    stats = (TensorProto.FLOAT, x.shape[:-1] + (1,))
    return [(x.dtype, x.shape), stats, stats, (x.dtype, x.shape)]


def _group_norm(i, a):
    return [(i[0].dtype, i[0].shape)] * 2


def _embed_layer_norm(i, a):
    ids, word = i[0], i[2]
    out = (word.dtype, ids.shape + word.shape[-1:])
    return [out, (TensorProto.INT32, ids.shape[:1]), out]


def _heads_out(batch, count, length, head, dtype):
    return (dtype, (batch, count, length, head))


def _projected_attention(x: TensorInfo, w: TensorInfo, past: TensorInfo | None, a: dict,
                         dtype: int) -> list[Output]:
    """Attention and QAttention: output [B, S, v_hidden], present (2, B, H, P + S, h)."""
    sizes = a.get("qkv_hidden_sizes") or [w.shape[-1] // 3] * 3
    batch, seq = x.shape[:2]
    count = a["num_heads"]
    total = seq + (past.shape[3] if past is not None else 0)
    return [(dtype, (batch, seq, sizes[2])), (dtype, (2, batch, count, total, sizes[1] // count))]


def _attention(i, a):
    return _projected_attention(i[0], i[1], i[4] if _given(i, 4) else None, a, i[0].dtype)


def _qattention(i, a):
    return _projected_attention(i[0], i[1], i[8] if _given(i, 8) else None, a, i[3].dtype)


def _multi_head_attention(i, a):
    query, key, value = i[0], i[1] if _given(i, 1) else None, i[2] if _given(i, 2) else None
    count = a["num_heads"]
    batch, seq = query.shape[:2]
    if key is None:  # packed QKV [B, S, H, 3, h]
        length, head, v_head = seq, query.shape[-1], query.shape[-1]
    elif len(key.shape) == 5:  # packed KV [B, L, H, 2, h]
        length, head, v_head = key.shape[1], key.shape[-1], key.shape[-1]
    elif len(key.shape) == 4:  # K, V already split into heads
        length, head, v_head = key.shape[2], key.shape[3], value.shape[3]
    else:
        length, head, v_head = key.shape[1], key.shape[2] // count, value.shape[2] // count
    total = length + (i[6].shape[2] if _given(i, 6) else 0)
    dtype = query.dtype
    return [(dtype, (batch, seq, count * v_head)), _heads_out(batch, count, total, head, dtype),
            _heads_out(batch, count, total, v_head, dtype)]


def _group_query_attention(i, a):
    query = i[0]
    hq, hkv = a["num_heads"], a["kv_num_heads"]
    batch, seq, hidden = query.shape
    head = hidden // (hq if _given(i, 1) else hq + 2 * hkv)
    total = seq + (i[3].shape[2] if _given(i, 3) else 0)
    present = _heads_out(batch, hkv, total, head, query.dtype)
    return [(query.dtype, (batch, seq, hq * head)), present, present]


def _qlinear_binary(i, a):
    return [(i[0].dtype, twin("Add", [i[0], i[3]]))]


def _qlinear_pool(op_type):
    def rule(i, a):
        attrs = _without(a, "channels_last")
        return [(i[0].dtype, _layout_twin(op_type, i[0], [], a.get("channels_last", 0),
                                          **attrs))]
    return rule


def _qlinear_reduce_mean(i, a):
    return [(i[0].dtype, twin("ReduceMean", [i[0]], **a))]


def _qlinear_concat(i, a):
    parts = i[2::3]
    return [(parts[0].dtype, twin("Concat", parts, axis=a["axis"]))]


def _qlinear_where(i, a):
    return [(i[1].dtype, twin("Where", [i[0], i[1], i[4]]))]


def _qlinear_conv(i, a):
    x, w = i[0], i[3]
    return [(x.dtype, _layout_twin("Conv", x, [w], a.get("channels_last", 0),
                                   **_conv_attrs(a)))]


def _quantize(i, a):
    dtype = i[2].dtype if _given(i, 2) else TensorProto.UINT8
    return [(dtype, i[0].shape)]


def _dequantize(i, a):
    return [(i[1].dtype, i[0].shape)]


def _gather_block_quantized(i, a):
    return [(i[2].dtype, twin("Gather", i[:2], axis=a.get("gather_axis", 0)))]


_RULES: dict[str, Callable[[list, dict], list[Output]]] = {
    **dict.fromkeys(sorted(CONTRIB_SHAPE_KEEPING), _same),
    "FusedConv": _fused_conv,
    "NhwcConv": _nhwc("Conv"),
    "NhwcFusedConv": _nhwc("Conv"),
    "NhwcMaxPool": _nhwc("MaxPool"),
    "FusedGemm": _fused_gemm,
    "QGemm": _qgemm,
    "FusedMatMul": _fused_matmul,
    "TransposeMatMul": _fused_matmul,
    "MatMulIntegerToFloat": _matmul_to_float(2),
    "DynamicQuantizeMatMul": _matmul_to_float(2),
    "MatMulNBits": _matmul_nbits,
    "GemmFastGelu": _gemm_fast_gelu,
    "BiasSplitGelu": _bias_split_gelu,
    "SkipLayerNormalization": _skip_norm,
    "SkipSimplifiedLayerNormalization": _skip_norm,
    "GroupNorm": _group_norm,
    "SkipGroupNorm": _group_norm,
    "EmbedLayerNormalization": _embed_layer_norm,
    "Attention": _attention,
    "QAttention": _qattention,
    "MultiHeadAttention": _multi_head_attention,
    "GroupQueryAttention": _group_query_attention,
    "QLinearAdd": _qlinear_binary,
    "QLinearMul": _qlinear_binary,
    "QLinearAveragePool": _qlinear_pool("AveragePool"),
    "QLinearGlobalAveragePool": _qlinear_pool("GlobalAveragePool"),
    "QLinearReduceMean": _qlinear_reduce_mean,
    "QLinearConcat": _qlinear_concat,
    "QLinearWhere": _qlinear_where,
    "QLinearConv": _qlinear_conv,
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    "GatherBlockQuantized": _gather_block_quantized,
}
# Default-domain ops whose outputs ONNX inference leaves untyped below the opset given:
# onnxruntime's own ops (LayerNormalization before it became standard in opset 17), and
# standard ops ONNX infers no shape for at any opset.
_ALWAYS = 1 << 30
def _grouped_matmul(inputs: list, attrs: dict) -> list[Output]:
    """Y (S×N) = the rows of X (S×K) taken group by group through W[g] (G×K×N)."""
    x, w = inputs[0], inputs[1]
    if len(x.shape) != 2 or len(w.shape) != 3:
        raise ValueError("grouped matmul of other ranks")
    return [(w.dtype, (x.shape[0], w.shape[2]))]


# Ops of other domains with a known shape rule: the grouped matmuls of MoE kernels, as torch's
# converter exports them (transformers' fallback kernel, torch's own).
_OTHER_DOMAIN_RULES: dict[tuple[str, str], Callable[[list, dict], list[Output]]] = {
    ("transformers", "grouped_mm_fallback"): _grouped_matmul,
    ("aten", "_grouped_mm"): _grouped_matmul,
}


CONTRIB_DEFAULT_DOMAIN = {"SimplifiedLayerNormalization": _ALWAYS, "LayerNormalization": 17,
                   "GroupNormalization": _ALWAYS, "MeanVarianceNormalization": _ALWAYS}
