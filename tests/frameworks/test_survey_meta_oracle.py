"""A survey row whose oracle runs out of memory on a real-weight build is measured on the meta
device, where FlopCounterMode reads the same shapes (timm's giants at a 6 GB cap)."""

import torch

from onnxflops.survey import measure as survey_measure
from onnxflops.survey.sources import Subject, Task


class RunsOutOfMemoryOnTheCpu(torch.nn.Module):
    """A 16→8 Linear on 4 rows (512 MACs, 136 params) whose eager CPU forward fails as torch's
    allocator does when the cap is reached; on meta, or traced for export, it runs."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, x):
        if x.device.type == "cpu" and not torch.compiler.is_exporting():
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: "
                               "can't allocate memory: you tried to allocate 1 bytes.")
        return self.linear(x)


def _row(monkeypatch) -> dict:
    subject = Subject(RunsOutOfMemoryOnTheCpu(), args=(torch.randn(4, 16),))
    monkeypatch.setattr(survey_measure, "build", lambda task, memory_gb: (subject, False))
    return survey_measure.measure(Task("factory", "spec", "oom"), memory_gb=6)


def test_an_oracle_out_of_memory_is_measured_again_on_meta(monkeypatch):
    row = _row(monkeypatch)
    assert (row["oracle_macs"], row["oracle_params"]) == (4 * 16 * 8, 16 * 8 + 8)
    assert (row["macs"], row["params"]) == (512, 136)
    assert row["verdict"] == "exact", row["reason"]
    assert row["input"].endswith(" on meta")


def test_an_oracle_that_fails_on_meta_too_keeps_its_out_of_memory_reason(monkeypatch):
    monkeypatch.setattr(survey_measure, "_oracle_on_meta", lambda subject: None)
    row = _row(monkeypatch)
    assert row["verdict"] == "oracle failed"
    assert "out of memory" in row["reason"]
