"""Reference architectures, each written once in Keras and once in PyTorch as the same network.

`PAIRS` lists them with the PyTorch input shapes (Keras models declare theirs, channels-last).
Builders are importable as factory specs, e.g. `onnxflops.models.keras_models:lenet` and
`onnxflops.models.torch_models:lenet`, so the CLI can convert them too. Importing this package
imports neither framework.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    name: str
    description: str
    torch_inputs: tuple[tuple[int, ...], ...]
    vocabulary: int = 0  # > 0: the inputs are token ids below this, not floats

    @property
    def keras_spec(self) -> str:
        return f"onnxflops.models.keras_models:{self.name}"

    @property
    def torch_spec(self) -> str:
        return f"onnxflops.models.torch_models:{self.name}"

    def keras_model(self):
        return _build(self.keras_spec)

    def torch_module(self):
        return _build(self.torch_spec)

    def torch_example(self) -> tuple:
        """Deterministic example inputs for the PyTorch twin (token ids where it takes them)."""
        import torch

        generator = torch.Generator().manual_seed(0)
        if self.vocabulary:
            return tuple(torch.randint(0, self.vocabulary, shape, generator=generator)
                         for shape in self.torch_inputs)
        return tuple(torch.randn(shape, generator=generator) for shape in self.torch_inputs)


def _build(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)()


PAIRS = (
    Pair("seed003_conv_gru_dense", "Conv2D → GRU(96) → Dense(256): TF and PyTorch disagreed",
         ((1, 1, 100, 256),)),
    Pair("seed001_input_only", "an input and nothing else", ((1, 1, 32, 32),)),
    Pair("seed001_dense_softmax", "Flatten → Dense(1, softmax)", ((1, 1, 32, 32),)),
    Pair("seed001_conv_dense_softmax", "Conv2D(1, 5, same) → Flatten → Dense(1, softmax)",
         ((1, 1, 32, 32),)),
    Pair("seed001_conv3", "Conv2D(1, 3, same)", ((1, 1, 32, 32),)),
    Pair("seed001_two_convs", "Conv2D(32, 3, same) → Conv2D(1, 3, same)", ((1, 1, 32, 32),)),
    Pair("seed002_conv_bn_relu", "Conv 7×7/2 (no bias) → BatchNorm → ReLU", ((1, 3, 500, 500),)),
    Pair("mlp", "Dense 64 → 128 → 64 → 10 with ReLU", ((1, 64),)),
    Pair("lenet", "LeNet-5: two conv + max-pool stages, three dense layers", ((1, 1, 32, 32),)),
    Pair("resnet_bottleneck", "ResNet bottleneck block with BatchNorm and skip add",
         ((1, 32, 8, 8),)),
    Pair("mobilenet_v2_block", "MobileNetV2 inverted residual: depthwise conv, ReLU6",
         ((1, 8, 16, 16),)),
    Pair("gru2", "two stacked GRU(16) layers", ((1, 12, 10),)),
    Pair("lstm2", "two stacked LSTM(16) layers", ((1, 12, 10),)),
    Pair("transformer_encoder", "encoder layer: 2-head attention, LayerNorm, GELU feed-forward",
         ((1, 10, 32),)),
    Pair("text_cnn", "Embedding → Conv1D → global max-pool → Dense", ((1, 40),), vocabulary=1000),
    Pair("upsampling_decoder", "ConvTranspose (stride 2) → nearest Upsample → Conv",
         ((1, 16, 8, 8),)),
)


def pair(name: str) -> Pair:
    for p in PAIRS:
        if p.name == name:
            return p
    raise KeyError(f"no reference pair named '{name}' (known: {', '.join(p.name for p in PAIRS)})")
