"""What a new user met in a first hour with a torch model: names, messages, layer paths."""

from __future__ import annotations

import pytest

import onnxflops

torch = pytest.importorskip("torch")
nn = torch.nn


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.head = nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))


def test_a_profiled_module_is_named_by_its_class_not_its_printout():
    module = TinyNet()
    assert "\n" in str(module)  # what naming it by its text would show
    profiled = onnxflops.profile(module, inputs={"x": (1, 3, 8, 8)}, runs=2, warmup=0,
                                 profile_runs=1, threads=1, ceilings=False)
    assert profiled.model == profiled.count.model == "TinyNet"
    assert profiled.to_text().startswith("TinyNet  ")
    assert onnxflops.count(module, inputs={"x": (1, 3, 8, 8)}).model == "TinyNet"
    assert onnxflops.compare(module, module, inputs={"x": (1, 3, 8, 8)}).a.model == "TinyNet"
