"""onnxruntime's com.microsoft ops: fusions its optimizers write, and quantized operators.

A fused op costs exactly what its unfused standard ops cost: each rule sums the standard rules over
the tensors the fused op computes (Node.cost_of), so FusedConv is Conv + Add + the activation,
SkipLayerNormalization is two Adds + LayerNormalization, Attention is the QKV MatMul + Add + the
ONNX Attention op. A QLinear elementwise or pooling op costs its QDQ form: DequantizeLinear of each
quantized input, the float op, QuantizeLinear of the output. Integer contractions (QGemm,
DynamicQuantizeMatMul, MatMulIntegerToFloat, QAttention's projection) are integer MACs.

One file per family; importing this package registers them all.
"""

from onnxflops.costs.contrib import (  # noqa: F401  (imported for their registrations)
    activation,
    attention,
    fused,
    linalg,
    normalization,
    quantized,
    twins,
)
