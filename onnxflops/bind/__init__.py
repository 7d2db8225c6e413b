"""Stage 2, bind: give the model's inputs the shapes the user asked for."""

from onnxflops.bind.inputs import TypedShape, bind_inputs, parse_input_spec, real_inputs

__all__ = ["TypedShape", "bind_inputs", "parse_input_spec", "real_inputs"]
