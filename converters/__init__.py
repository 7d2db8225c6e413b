"""Framework models → ONNX, with graphs that depend on the architecture only.

`keras_to_onnx` goes through tf2onnx, `torch_to_onnx` through torch.onnx.export (the torch.export
based exporter by default, the TorchScript one with exporter="legacy"). Unless keep_weights=True,
tf2onnx and the legacy exporter convert with stand-in weights, so that exporter optimisations cannot
key on weight values, and the dynamo exporter writes weights as headers without bytes; weights on
the meta device are headers always (`is_graph_only`).
`convert` turns anything else a user can name (a file, a factory spec, a model object) into ONNX.
TensorFlow and torch are imported only when a model of theirs is converted.
"""

from onnxflops.converters.causal_lm import CausalLM, causal_lm_to_onnx
from onnxflops.converters.from_keras import keras_to_onnx
from onnxflops.converters.from_torch import ABSENT_WEIGHTS, is_graph_only, torch_to_onnx
from onnxflops.converters.sources import accepts, convert, declared_inputs, load, needs_conversion

__all__ = ["ABSENT_WEIGHTS", "CausalLM", "accepts", "causal_lm_to_onnx", "convert",
           "declared_inputs", "is_graph_only", "keras_to_onnx", "load", "needs_conversion",
           "torch_to_onnx"]
