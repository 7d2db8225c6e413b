"""Ops that torch's ONNX exporters have no translation for: library custom ops and MoE experts.

A `torch.library` custom op (transformers' `grouped_mm_fallback`, the kernel its default
mixture-of-experts layers run under export) has no ONNX translation, so export used to fail.
Every custom op defined outside torch, and every op a user registers with `register_torch_op`,
is exported as one node of the op's own domain and name (`transformers::grouped_mm_fallback`):
its tensor arguments its inputs, its scalar arguments attributes. The exporter knows the node's
output shapes from the op's fake implementation; they are recorded on the node
(`onnxflops.shapes`, beside the input shapes they hold for), so that analysis gives the node
its outputs wherever its inputs have those shapes. A user may give a translation of their own (an
onnxscript function, as `torch.onnx.export`'s custom_translation_table takes) instead.

transformers' eager experts loop over the experts a batch is routed to: the tokens each expert
gets depend on the router, so neither exporter gives their products shapes. They are exported
with the `batched_mm` form instead: each token's k experts' weights are gathered and applied,
so the graph holds the products of the tokens × k routed pairs over all experts, the total the
eager loop runs whatever the routing (the rule `onnxflops llm` uses).
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Callable, Iterator

from onnxflops.errors import OnnxFlopsError

# Node metadata: {"inputs": [[dims]...], "outputs": [[dtype, [dims]]...]}.
SHAPES_KEY = "onnxflops.shapes"
EXPERTS_FORM = "batched_mm"  # the experts form exported where a model runs the eager loop
# Namespaces whose ops torch's exporter translates itself, or that hold no user work.
_TORCH_NAMESPACES = ("aten", "prims", "prim", "debug_mode_ops", "higher_order", "onnx",
                     "onnx_symbolic", "quantized_decomposed", "_c10d_functional", "c10d")
# "namespace::name" → its translation (None: exported as a node of its own)
_user_translations: dict[str, Callable | None] = {}
_emitted: dict[str, Callable] = {}  # the node-emitting translations made, by op


def register_torch_op(op, translation: Callable | None = None) -> None:
    """Export the torch op `op` (an OpOverload such as `torch.ops.acme.scale.default`, its packet,
    or "acme::scale") with `translation`, an onnxscript function taking the op's arguments, as
    `torch.onnx.export(custom_translation_table=...)` takes; without one, as one node of domain
    "acme" and type "scale" that keeps its output shapes. Price that node with
    `onnxflops.register_rule("acme", "scale", rule)`."""
    _user_translations[_qualname(op)] = translation


def custom_translations() -> dict:
    """The dynamo exporter's custom_translation_table: each user-registered op, and each custom op
    defined outside torch (a library's), as `register_torch_op` says."""
    import torch
    from torch._library.custom_ops import OPDEFS

    names = {name for name, definition in OPDEFS.items()
             if name.partition("::")[0] not in _TORCH_NAMESPACES
             and not _defined_by_torch(getattr(getattr(definition, "_init_fn", None),
                                               "__module__", "torch"))}
    table = dict(_missing_aten_translations())
    for name in names | set(_user_translations):
        namespace, _, op_name = name.partition("::")
        packet = getattr(getattr(torch.ops, namespace), op_name, None)
        if packet is None:
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            try:
                table[op] = _user_translations.get(name) or _node_translation(op)
            except Exception:  # noqa: BLE001 - a schema no node can mirror: the op stays untranslated
                continue
    return table


def _missing_aten_translations() -> dict:
    """Translations of the torch ops torchlib has none for, or one that differs from torch, that
    transformers' models run: erfinv (Gemma 3n's activation sparsity, via Normal.icdf),
    _is_all_true (ProphetNet's torch.all in a check), squeeze of a dim (NeMo's RNN-T joint
    squeezes a dim of 16 tokens: a no-op in torch, which ONNX's Squeeze refuses) and randn with
    a generator (UnivNet's noise)."""
    import torch

    return {torch.ops.aten.erfinv.default: erf_inv, torch.ops.prims.erf_inv.default: erf_inv,
            torch.ops.aten._is_all_true.default: is_all_true,
            torch.ops.aten.squeeze.dim: squeeze_dim,
            torch.ops.aten.randn.generator: randn_generator}


# Giles (2010), "Approximating the erfinv function", single precision: erfinv(x) ≈ x·p(w),
# w = −ln((1 − x)(1 + x)); p a polynomial in w − 2.5 where w < 5, else in √w − 3.
_ERF_INV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                    0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erf_inv(self):
    """erfinv(x) ≈ x · p(w), w = −ln((1 − x)(1 + x)), Giles' single-precision polynomials
    (_ERF_INV_CENTRAL in w − 2.5 where w < 5, _ERF_INV_TAIL in √w − 3 elsewhere; relative
    error about 1e-7), in float32, as elementwise ONNX ops."""
    from onnxscript import opset18 as op

    def constant(value: float):
        return op.Constant(value_float=value)

    def horner(coefficients, t):
        total = constant(coefficients[0])
        for c in coefficients[1:]:
            total = op.Add(op.Mul(total, t), constant(c))
        return total

    x = op.Cast(self, to=1)  # FLOAT
    one = constant(1.0)
    w = op.Neg(op.Log(op.Mul(op.Sub(one, x), op.Add(one, x))))
    central = horner(_ERF_INV_CENTRAL, op.Sub(w, constant(2.5)))
    tail = horner(_ERF_INV_TAIL, op.Sub(op.Sqrt(w), constant(3.0)))
    return op.CastLike(op.Mul(x, op.Where(op.Less(w, constant(5.0)), central, tail)), self)


def is_all_true(self):
    """all(x) = min over every element of x as 0/1 (1 on an empty x: ReduceMin's identity is
    the largest int), as a bool scalar."""
    from onnxscript import opset18 as op

    return op.Cast(op.ReduceMin(op.Cast(self, to=6), keepdims=0), to=9)  # INT32, BOOL


def squeeze_dim(self, dim: int):
    """torch's squeeze(x, dim): x itself where that dim's size is known and not 1 (torch leaves
    it; ONNX's Squeeze refuses it, and onnxruntime with it the whole model), else a Squeeze."""
    from onnxscript import opset18 as op

    shape = self.shape
    if shape is not None and len(shape) == 0:
        return op.Identity(self)
    if shape is not None and isinstance(shape[dim], int) and shape[dim] != 1:
        return op.Identity(self)
    return op.Squeeze(self, op.Constant(value_ints=[dim]))


def randn_generator(size, generator=None, dtype: int = 1, layout: str = "", device: str = "",
                    pin_memory: bool = False):
    """torch.randn(size, generator=g): normal noise of `size` as RandomNormalLike, as torchlib
    translates randn without a generator (the values are random either way; a count reads the
    shape)."""
    from onnxscript import opset18 as op

    return op.RandomNormalLike(op.ConstantOfShape(size), dtype=1 if dtype is None else dtype)


def _defined_by_torch(module: str) -> bool:
    """Whether a custom op's defining module is torch's own (a library named torch_scatter or
    torchao is not)."""
    return module == "torch" or module.startswith("torch.")


def record_custom_shapes(graph, domains: set[str]) -> None:
    """Write on each node of `domains` (an onnx_ir graph, the exporter's) the shapes its inputs
    and outputs have here, where all are known: analysis reuses the outputs for those inputs."""
    for node in graph.all_nodes() if hasattr(graph, "all_nodes") else graph:
        if node.domain not in domains:
            continue
        shapes = {"inputs": [_dims(v) for v in node.inputs if v is not None],
                  "outputs": [[int(v.dtype) if v.dtype is not None else 0, _dims(v)]
                              for v in node.outputs]}
        if all(d is not None for d in shapes["inputs"]) \
                and all(d is not None and t for t, d in shapes["outputs"]):
            node.metadata_props[SHAPES_KEY] = json.dumps(shapes)


def emitted_domains(table: dict) -> set[str]:
    """The domains of the nodes the table's node-emitting translations write."""
    return {op.namespace for op, fn in table.items() if getattr(fn, "_onnxflops_node", False)}


@contextlib.contextmanager
def experts_exported_as(module, form: str = EXPERTS_FORM, *,
                        only_from: tuple[str, ...] | None = ("eager",)) -> Iterator[None]:
    """transformers MoE experts in `module` run as `form` for the duration (their configs'
    `_experts_implementation`); with `only_from`, only those that run one of these forms."""
    configs = {id(c): c for c in (getattr(m, "config", None) for m in module.modules()
                                  if hasattr(m, "_is_expert_parallel"))
               if c is not None and hasattr(c, "_experts_implementation")}
    changed = []
    for config in configs.values():
        current = config._experts_implementation
        if only_from is None or current in only_from:
            changed.append((config, current))
            config._experts_implementation = form
    try:
        yield
    finally:
        for config, previous in changed:
            config._experts_implementation = previous


@contextlib.contextmanager
def registry_export_patches() -> Iterator[bool]:
    """transformers' own patches of torch ops for its ONNX export, for the duration: histc over
    the data's range, searchsorted and bucketize as comparisons, cummax and cummin as masked
    reductions, a copy before a view of a non-contiguous tensor, and the like. Decompositions of
    the same values (no product changes), which make exportable what neither exporter converts as
    written (HunYuan-MoE's `histc` of min = max). Yields False where transformers has none."""
    try:
        from transformers.exporters.utils import apply_patches
    except ImportError:  # no transformers, or one without its exporters
        yield False
        return
    with apply_patches("onnx"):
        yield True


@contextlib.contextmanager
def attention_as_4d() -> Iterator[None]:
    """Scaled dot-product attention on inputs of another rank than 4 runs, for the duration, on
    4-D views of them (every dim before the last two flattened into one batch dim, one head), its
    result viewed back: the same products, in the form the ONNX translation of SDPA takes (it
    refuses 5-D inputs, such as NesT's and Twins' windows × heads, and 3-D ones, such as timm's
    SAM ViT's batch × heads: "only 4D query, key, and value are supported"). Grouped-query
    attention (enable_gqa) keeps its own form.

    For the exporter's own trace: the one trace (`single_trace`) applies the same rule as its
    rule for the op (`attention_on_4d_views`), without a mode's cost on every torch call."""
    import torch
    from torch.overrides import TorchFunctionMode

    attention = torch.nn.functional.scaled_dot_product_attention

    class FourDimensional(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is attention and len(args) >= 3 and all(
                    isinstance(t, torch.Tensor) for t in args[:3]) and _on_views(args[0], kwargs):
                return _attention_4d(attention, *args, **kwargs)
            return func(*args, **kwargs)

    with FourDimensional():
        yield


def attention_on_4d_views(decomposition: Callable) -> Callable:
    """A trace's rule for `aten.scaled_dot_product_attention` (see `attention_as_4d`) around its
    `decomposition` there: on inputs of another rank than 4, the op again on their 4-D views, which
    the decomposition then gets."""
    import torch

    attention = torch.ops.aten.scaled_dot_product_attention.default

    def on_4d_views(query, *args, **kwargs):
        if _on_views(query, kwargs):
            return _attention_4d(attention, query, *args, **kwargs)
        return decomposition(query, *args, **kwargs)

    return on_4d_views


def batch_norm_in_inference(input, weight, bias, running_mean, running_var, training, momentum,
                            eps, cudnn_enabled):
    """A trace's rule for `aten.batch_norm`: y = `_native_batch_norm_legit_no_training`(x, γ, β,
    μ, σ², eps)[0] in inference with running statistics, on a non-empty CPU or meta tensor;
    otherwise its own decomposition.

    That is the op its decomposition reaches, two more dispatches down (`_batch_norm_impl_index`,
    then `native_batch_norm`, whose kernel is Python), each through a trace's functional, proxy
    and fake layers: a batch norm cost a trace 2.5 times a convolution. Other devices may reach
    other kernels (cuDNN's), so they decompose as before."""
    import torch

    numel = input.numel()
    if training or running_mean is None or running_var is None \
            or input.device.type not in ("cpu", "meta") or not isinstance(numel, int) or not numel:
        return torch.ops.aten.batch_norm.default._op_dk(
            torch._C.DispatchKey.CompositeImplicitAutograd, input, weight, bias, running_mean,
            running_var, training, momentum, eps, cudnn_enabled)
    return torch.ops.aten._native_batch_norm_legit_no_training.default(
        input, weight, bias, running_mean, running_var, momentum, eps)[0]


def _on_views(query, kwargs: dict) -> bool:
    """Whether attention of this query runs on 4-D views: of another rank, and not grouped."""
    return query.dim() != 4 and not kwargs.get("enable_gqa")


def _attention_4d(attention, query, key, value, attn_mask=None, *args, **kwargs):
    def flat(t):
        return None if t is None else t.reshape(-1, 1, *t.shape[-2:])

    if attn_mask is not None:  # broadcast over the batch dims as SDPA would, then flattened
        attn_mask = attn_mask.expand(*query.shape[:-2], query.shape[-2], key.shape[-2])
    out = attention(flat(query), flat(key), flat(value), flat(attn_mask), *args, **kwargs)
    return out.reshape(*query.shape[:-1], value.shape[-1])


def _qualname(op) -> str:
    if isinstance(op, str):
        if "::" not in op:
            raise OnnxFlopsError(f"torch op '{op}': name it as 'namespace::name'")
        return op.split(".")[0]
    schema = getattr(op, "_schema", None)
    if schema is not None:
        return schema.name
    qualified = getattr(op, "_qualified_op_name", None)
    if qualified:
        return qualified
    raise OnnxFlopsError(f"torch op {type(op).__name__}: not a torch op (give an OpOverload, "
                         "its packet, or 'namespace::name')")


def _dims(value) -> list[int] | None:
    shape = value.shape if value is not None else None
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return list(shape)


_TENSOR_TYPES = [f"tensor({t})" for t in ("float", "float16", "bfloat16", "double", "int64",
                                           "int32", "int16", "int8", "uint8", "bool")]


def _node_translation(op) -> Callable:
    """A translation writing `op` as one node of its namespace's domain: tensor arguments are its
    inputs, scalar and string ones (ints, floats, bools, strings, and lists of them) attributes."""
    if op in _emitted:
        return _emitted[op]
    import onnx.defs
    import torch
    from onnxscript import values

    schema = op._schema
    namespace, _, name = schema.name.partition("::")
    attribute_types = {torch.FloatType: (onnx.defs.OpSchema.AttrType.FLOAT, float),
                       torch.IntType: (onnx.defs.OpSchema.AttrType.INT, int),
                       torch.BoolType: (onnx.defs.OpSchema.AttrType.INT, bool),
                       torch.StringType: (onnx.defs.OpSchema.AttrType.STRING, str)}
    tensors, attributes = [], []
    for argument in schema.arguments:
        kind = argument.type
        if isinstance(kind, torch.OptionalType):
            kind = kind.getElementType()
        if isinstance(kind, torch.TensorType):
            tensors.append(argument.name)
        elif type(kind) in attribute_types:
            attributes.append((argument.name, *attribute_types[type(kind)]))
    onnx_schema = onnx.defs.OpSchema(
        name, namespace, 1,
        inputs=[onnx.defs.OpSchema.FormalParameter(
            t, f"T{i}", param_option=onnx.defs.OpSchema.FormalParameterOption.Optional)
            for i, t in enumerate(tensors)],
        outputs=[onnx.defs.OpSchema.FormalParameter(f"output{i}", "R")
                 for i, _ in enumerate(schema.returns)],
        type_constraints=[(f"T{i}", _TENSOR_TYPES, "") for i, _ in enumerate(tensors)]
        + [("R", _TENSOR_TYPES, "")],
        attributes=[onnx.defs.OpSchema.Attribute(a, kind, "", required=False)
                    for a, kind, _ in attributes])
    node = values.Op(values.Opset(namespace, 1), name, onnx_schema)
    names = [a.name for a in schema.arguments]

    def translation(*args, **kwargs):
        given = {**dict(zip(names, args)), **kwargs}
        return node(*[given.get(t) for t in tensors],
                    **{a: (int(given[a]) if kind is bool else given[a])
                       for a, _, kind in attributes if given.get(a) is not None})

    # The exporter matches a translation to the op by its parameters' names and annotations.
    translation.__signature__ = inspect.Signature(
        [inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           default=None if a.has_default_value() else inspect.Parameter.empty)
         for a in schema.arguments])
    translation.__annotations__ = {a: kind for a, _, kind in attributes}
    translation._onnxflops_node = True
    _emitted[op] = translation
    return translation


# Upsampling modes the TorchScript exporter has no symbolic for, as the ONNX Resize that the
# dynamo exporter writes for them (opset 18: antialias, axes): (mode, Resize attributes).
_LEGACY_RESIZES = {
    "_upsample_bicubic2d_aa": {"mode": "cubic", "antialias": 1, "cubic_coeff_a": -0.5},
    "_upsample_bilinear2d_aa": {"mode": "linear", "antialias": 1},
    "_upsample_nearest_exact1d": {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
    "_upsample_nearest_exact2d": {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
    "_upsample_nearest_exact3d": {"mode": "nearest", "nearest_mode": "round_prefer_ceil"},
}
_legacy_symbolics_registered: list[int] = []


def register_legacy_resizes(opset: int) -> None:
    """Give the TorchScript exporter the upsampling modes it lacks, for `opset` (18 or later,
    where Resize takes antialias and axes), each one Resize over the spatial axes; and diff."""
    if opset < 18 or opset in _legacy_symbolics_registered:
        return
    import torch

    for name, attributes in _LEGACY_RESIZES.items():
        torch.onnx.register_custom_op_symbolic(f"aten::{name}", _legacy_resize(attributes), opset)
    torch.onnx.register_custom_op_symbolic("aten::diff", _legacy_diff, opset)
    torch.onnx.register_custom_op_symbolic("aten::cumsum", _legacy_cumsum, opset)
    _legacy_symbolics_registered.append(opset)


def _legacy_diff(g, x, n, dim, prepend, append):
    """torch.diff(x, n, dim, prepend, append), which the TorchScript exporter lacks (transformers'
    packed-sequence check runs it on the position ids of every model that builds a mask): x
    with prepend and append joined along dim, then n times x[1:] − x[:−1] along dim."""
    import torch
    from torch.onnx import symbolic_helper

    times, axis = symbolic_helper._get_const(n, "i", "n"), symbolic_helper._get_const(dim, "i", "dim")
    parts = [t for t in (prepend, x, append) if not symbolic_helper._is_none(t)]
    if len(parts) > 1:
        x = g.op("Concat", *parts, axis_i=axis)

    def constant(values):
        return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))

    for _ in range(times):
        later = g.op("Slice", x, constant([1]), constant([2**62]), constant([axis]))
        earlier = g.op("Slice", x, constant([0]), constant([-1]), constant([axis]))
        x = g.op("Sub", later, earlier)
    return x


# torch's cumsum of these sums in int64 (where no dtype is given); ONNX's CumSum takes none of
# bool, int8 and int16, and of int32 would sum in int32.
_CUMSUM_PROMOTED = {"Bool", "Byte", "Char", "Short", "Int"}


def _legacy_cumsum(g, x, dim, dtype):
    """torch.cumsum(x, dim, dtype): x cast to `dtype` where given, or to int64 where torch
    promotes it (a bool mask's running count: transformers' packed-sequence check), then a
    CumSum. The TorchScript exporter's own left a CumSum of bool, which onnxruntime refuses."""
    import torch
    from torch.onnx import symbolic_helper

    to = None
    if not symbolic_helper._is_none(dtype):
        from torch.onnx._internal.torchscript_exporter import _type_utils

        to = int(_type_utils.JitScalarType(symbolic_helper._get_const(dtype, "i", "dtype"))
                 .onnx_type())
    elif x.type().scalarType() in _CUMSUM_PROMOTED:
        to = 7  # INT64
    if to is not None:
        x = g.op("Cast", x, to_i=to)
    axis = g.op("Constant", value_t=torch.tensor(symbolic_helper._get_const(dim, "i", "dim"),
                                                 dtype=torch.int64))
    return g.op("CumSum", x, axis)



def _legacy_resize(attributes: dict) -> Callable:
    def symbolic(g, x, output_size, *rest):
        import torch
        from torch.onnx import symbolic_helper

        align_corners = symbolic_helper._maybe_get_const(rest[0], "b") if len(rest) == 2 else False
        scale_factors = rest[-1]
        rank = symbolic_helper._get_tensor_rank(x)
        if rank is None:
            raise RuntimeError("an upsampling of an input of unknown rank")
        axes = list(range(2, rank))
        transform = "align_corners" if align_corners is True else (
            "half_pixel" if attributes["mode"] == "nearest" else "pytorch_half_pixel")
        empty = g.op("Constant", value_t=torch.tensor([], dtype=torch.float32))
        if not symbolic_helper._is_none(output_size):
            sizes = g.op("Cast", output_size, to_i=7)
            inputs = (x, empty, empty, sizes)
        else:
            scales = g.op("Cast", scale_factors, to_i=1)
            inputs = (x, empty, scales)
        named = {f"{k}_{'s' if isinstance(v, str) else 'f' if isinstance(v, float) else 'i'}": v
                 for k, v in attributes.items()}
        return g.op("Resize", *inputs, axes_i=axes, coordinate_transformation_mode_s=transform,
                    **named)

    return symbolic
