"""Stage 2, bind: give the model's inputs the shapes the user asked for."""

from onnxflops.bind.inputs import bind_inputs, parse_input_spec, real_inputs

__all__ = ["bind_inputs", "parse_input_spec", "real_inputs"]
