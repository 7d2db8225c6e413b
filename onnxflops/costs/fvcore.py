"""`--convention fvcore`: the FLOPs fvcore's FlopCountAnalysis reports, op by op.

fvcore (facebookresearch/fvcore, the counter behind the "GFLOPs" of timm's, detectron2's and many
papers' tables) counts one fused multiply-add as one flop, and prices only the ops in its table
`_DEFAULT_SUPPORTED_OPS` (fvcore/nn/flop_count.py); every other op (activations, elementwise
arithmetic, softmax, pooling but adaptive average pooling) counts 0. Each rule below is the ONNX
op(s) a torch op of that table exports to, priced by fvcore's handle for it (fvcore/nn/
jit_handles.py), cited in its docstring.

What an ONNX graph cannot tell apart, and how it is priced here:
- normalization with or without an affine transform: ONNX always carries the scale (and
  BatchNormalization the bias), so fvcore's affine figure is used (5 per element for layer,
  group and instance norm; 2 for batch norm in eval);
- adaptive average pooling to 1×1 exports as GlobalAveragePool (TorchScript exporter) or as a
  ReduceMean over the two spatial axes keeping them (torch.export): both count numel(X), as would
  a `x.mean((2, 3), keepdim=True)`, which fvcore prices at 0. Adaptive pooling to a larger grid
  exports as AveragePool, which counts 0 like fvcore's avg_pool2d.
"""

from __future__ import annotations

import math

import numpy as np

from onnxflops.costs.node import Node
from onnxflops.costs.registry import convention
from onnxflops.errors import Uncostable

FVCORE = "fvcore"


@convention(FVCORE, "Conv")
def conv(n: Node) -> int:
    """N·prod(W.shape)·prod(Y spatial): fvcore's conv_flop_count (aten::_convolution), the MACs"""
    y = n.output().dims
    return y[0] * math.prod(n.input(1).dims) * math.prod(y[2:])


@convention(FVCORE, "ConvTranspose")
def conv_transpose(n: Node) -> int:
    """N·prod(W.shape)·prod(X spatial): fvcore's conv_flop_count with transposed=True, the MACs"""
    x = n.input(0).dims
    return x[0] * math.prod(n.input(1).dims) * math.prod(x[2:])


@convention(FVCORE, "Gemm")
def gemm(n: Node) -> int:
    """M·K·N: fvcore's addmm_flop_jit and linear_flop_jit (aten::addmm, aten::linear), the MACs"""
    a, b = n.input(0).dims, n.input(1).dims
    m, k = (a[1], a[0]) if n.attr("transA", 0) else (a[0], a[1])
    return m * k * (b[0] if n.attr("transB", 0) else b[1])


@convention(FVCORE, "MatMul")
def matmul(n: Node) -> int:
    """prod(A.shape)·B.shape[-1]: fvcore's matmul_flop_jit (also aten::mm, linear, bmm)

    A 1-D B gives prod(A.shape)."""
    b = n.input(1).dims
    return n.input(0).numel * (b[-1] if len(b) >= 2 else 1)


@convention(FVCORE, "Einsum")
def einsum(n: Node) -> int:
    """floor(numpy's einsum_path 'optimized flop' count / 2): fvcore's einsum_flop_jit"""
    equation = n.attr("equation").replace(" ", "")
    shapes = [t.dims for t in n.inputs()]
    if not all(isinstance(d, int) for s in shapes for d in s):
        raise Uncostable("fvcore prices an einsum by numpy's einsum_path, which needs every dim")
    # Same letters in order of appearance, as fvcore renames them (its two special cases,
    # "abc,abd->acd" and "abc,adc->adb", are the MACs, which the path gives as well).
    letters = dict.fromkeys(c for c in equation if c.isalpha())
    equation = equation.translate({ord(c): 97 + i for i, c in enumerate(letters)})
    if equation == "abc,abd->acd":
        (a, b, c), d = shapes[0], shapes[-1][-1]
        return a * b * c * d
    if equation == "abc,adc->adb":
        (a, b, c), d = shapes[0], shapes[-1][1]
        return a * b * c * d
    # Zero-stride views: einsum_path reads shapes only, whatever their size.
    operands = [np.broadcast_to(np.zeros((), np.float32), s) for s in shapes]
    path = np.einsum_path(equation, *operands, optimize="optimal")[1]
    for line in path.splitlines():
        if "optimized flop" in line.lower():
            return int(math.floor(float(line.split(":")[-1]) / 2))
    raise Uncostable("numpy's einsum_path gave no flop count")


@convention(FVCORE, "BatchNormalization")
def batch_norm(n: Node) -> int:
    """2·numel(X) in eval, 5·numel(X) in training mode: fvcore's batchnorm_flop_jit (affine)"""
    return (5 if n.attr("training_mode", 0) else 2) * n.input(0).numel


@convention(FVCORE, ["LayerNormalization", "GroupNormalization", "InstanceNormalization"])
def norm(n: Node) -> int:
    """5·numel(X): fvcore's norm_flop_counter (aten::layer/group/instance_norm), affine"""
    return 5 * n.input(0).numel


@convention(FVCORE, ["Resize", "Upsample"])
def upsample(n: Node) -> int:
    """numel(Y) nearest, 4·numel(Y) linear, 4-D Y only: fvcore's upsample_*2d handles

    fvcore prices aten::upsample_nearest2d with elementwise_flop_counter(0, 1) and
    aten::upsample_bilinear2d with (0, 4); it has none for bicubic or other ranks."""
    y = n.output()
    if y.rank != 4:
        return 0  # fvcore has no handle for 1-D or 3-D upsampling
    return {"nearest": 1, "linear": 4}.get(n.attr("mode", "nearest"), 0) * y.numel


@convention(FVCORE, "GlobalAveragePool")
def global_average_pool(n: Node) -> int:
    """numel(X) for 4-D X: fvcore's elementwise_flop_counter(1, 0) (aten::adaptive_avg_pool2d)"""
    x = n.input(0)
    return x.numel if x.rank == 4 else 0


@convention(FVCORE, "ReduceMean")
def reduce_mean(n: Node) -> int:
    """numel(X) for a kept mean over 4-D X's spatial axes: fvcore's adaptive_avg_pool2d handle

    That is adaptive_avg_pool2d to 1×1 as torch.export writes it; fvcore prices it with
    elementwise_flop_counter(1, 0). Any other mean is aten::mean, which fvcore does not count."""
    x = n.input(0)
    if x.rank != 4 or not n.attr("keepdims", 1):
        return 0
    axes = n.attr_or_input("axes", 1)
    return x.numel if axes is not None and sorted(a % 4 for a in axes) == [2, 3] else 0


@convention(FVCORE, "GridSample")
def grid_sample(n: Node) -> int:
    """4·numel(Y): fvcore's elementwise_flop_counter(0, 4) (aten::grid_sampler, as bilinear)"""
    return 4 * n.output().numel
