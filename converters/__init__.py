"""Framework models → ONNX, with graphs that depend on the architecture only.

`keras_to_onnx` goes through tf2onnx, `torch_to_onnx` through torch.onnx.export (the torch.export
based exporter by default, the TorchScript one with exporter="legacy"). Unless keep_weights=True,
tf2onnx and the legacy exporter convert with stand-in weights, so that exporter optimisations cannot
key on weight values, and the dynamo exporter writes weights as headers without bytes; weights on
the meta device are headers always (`is_graph_only`).
Which converter a model a user names goes to (a file, a factory spec, a model object) is decided
by the source table, onnxflops.sources. TensorFlow and torch are imported only when a model of
theirs is converted; each name here loads its module on first use.
"""

from onnxflops import loaded_on_first_use

_PUBLIC = {
    "ABSENT_WEIGHTS": "onnxflops.converters.common",
    "CausalLM": "onnxflops.converters.causal_lm",
    "causal_lm_to_onnx": "onnxflops.converters.causal_lm",
    "keras_to_onnx": "onnxflops.converters.from_keras",
    "saved_model_to_onnx": "onnxflops.converters.from_keras",
    "is_graph_only": "onnxflops.converters.from_torch",
    "torch_to_onnx": "onnxflops.converters.from_torch",
}

__all__ = sorted(_PUBLIC)
__getattr__, __dir__ = loaded_on_first_use(__name__, _PUBLIC)
