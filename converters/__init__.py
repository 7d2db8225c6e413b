"""Framework models → ONNX, with graphs that depend on the architecture only.

`keras_to_onnx` goes through tf2onnx, `torch_to_onnx` through torch.onnx.export (the torch.export
based exporter by default, the TorchScript one with exporter="legacy"). Both convert with stand-in
weights unless keep_weights=True, so that exporter optimisations cannot key on weight values.
`convert` turns anything else a user can name (a file, a factory spec, a model object) into ONNX.
TensorFlow and torch are imported only when a model of theirs is converted.
"""

from converters.causal_lm import CausalLM, causal_lm_to_onnx
from converters.from_keras import keras_to_onnx
from converters.from_torch import torch_to_onnx
from converters.sources import accepts, convert, declared_inputs, load, needs_conversion

__all__ = ["CausalLM", "accepts", "causal_lm_to_onnx", "convert", "declared_inputs", "keras_to_onnx", "load", "needs_conversion",
           "torch_to_onnx"]
