"""Translations of torch ops on complex tensors that torchlib lacks, in its form of a complex
tensor: a real one with a trailing pair (real, imaginary), as view_as_real gives it (and as
ONNX's DFT and STFT give their results).

Complex rotary embeddings (Llama 4's: view_as_complex of the query's pairs, times a table of
unit complex numbers broadcast over the heads by an unsqueeze) export once these exist: every
other op of that computation has torchlib's complex translation.
"""

from __future__ import annotations


def complex_unsqueeze(self, dim: int):
    """unsqueeze(z, dim) on the real form [..., 2]: the same axis counted from the front; from
    the back (dim < 0), one further, past the trailing pair."""
    from onnxscript.onnx_opset import opset18 as op

    return op.Unsqueeze(self, [dim - 1 if dim < 0 else dim])


def complex_pad(self, pad, mode: str = "constant", value=None):
    """pad(z, pad) on the real form [..., 2]: torch's pad list names the last axes first, so the
    trailing pair takes (0, 0) ahead of it and every axis of z keeps its own (a spectrogram padded
    along its frames before a separator's layers)."""
    from onnxscript.function_libs.torch_lib.ops.nn import aten_pad

    return aten_pad.func(self, [0, 0, *pad], mode, value)


def complex_translations() -> dict:
    """{torch op: its complex translation}, for the exporter's registry (is_complex=True)."""
    import torch

    return {torch.ops.aten.unsqueeze.default: complex_unsqueeze,
            torch.ops.aten.pad.default: complex_pad}
