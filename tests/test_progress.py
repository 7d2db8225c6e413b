"""Progress bars (tqdm) on stderr for long work: shown on a terminal past a second, never on a
pipe, and what `llm`'s counts add goes to the one bar shown."""

from __future__ import annotations

import io
import sys

import pytest

import onnxflops
from helpers import model, node, weight
from onnxflops import progress

pytest.importorskip("tqdm")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def mlp():
    return model([node("MatMul", ["x", "w"], ["y"])], {"x": [2, 8]}, [weight("w", (8, 4))])


def test_a_count_on_a_terminal_past_the_delay_shows_its_steps(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "DELAY_S", 0)
    monkeypatch.setattr(progress, "REDRAW_S", 0)
    onnxflops.count(mlp())
    shown = terminal.getvalue()
    assert "counting: costing" in shown and "steps done" in shown


def test_a_quick_count_or_one_on_a_pipe_shows_nothing(monkeypatch, capsys):
    onnxflops.count(mlp())  # stderr captured: not a terminal
    assert capsys.readouterr().err == ""
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    onnxflops.count(mlp())  # a terminal, but done within the second
    assert terminal.getvalue() == ""


def test_work_inside_work_adds_its_steps_to_the_bar_shown(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "DELAY_S", 0)
    monkeypatch.setattr(progress, "REDRAW_S", 0)
    with progress.steps("llm"):
        with progress.step("exporting"):
            pass
        onnxflops.count(mlp())
    shown = terminal.getvalue()
    # exporting, then the count's loading, analyzing and costing (an .onnx: no converting)
    assert "llm: exporting (0 steps done" in shown and "llm: costing (4 steps done" in shown
    assert "counting:" not in shown


def test_under_another_bar_a_count_shows_none(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "DELAY_S", 0)
    with progress.shown_elsewhere():  # profile's and report's stage bar has the line
        onnxflops.count(mlp())
    assert terminal.getvalue() == ""


def test_the_stages_bar_advances_through_models_and_stages(monkeypatch):
    """profile's and report's bar: the share done is (models done + (stage + fraction) / 4) / 2
    for two models through the five stages."""
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "REDRAW_S", 0)
    names = ("counting", "timing", "profiling", "ceilings", "done")
    with progress.stages(2, names) as bar:
        bar.start("a.onnx")
        bar.update("timing", 0.5)  # stage 1 of 4, half done: 1.5/4 of the first of two models
        first = terminal.getvalue()
        onnxflops.count(mlp())  # the work inside shows no bar of its own
        bar.finish_one()
        bar.start("b.onnx")
        bar.update("done", 1.0)
    shown = terminal.getvalue()
    assert " 19% |" in first and "1/2 a.onnx: timing" in first
    assert "100% |" in shown and "2/2 b.onnx: done" in shown
    assert "counting:" not in shown


def test_the_stages_bar_on_a_pipe_shows_nothing(capsys):
    with progress.stages(1, ("counting", "done")) as bar:
        bar.start("a.onnx")
        bar.update("done", 1.0)
    assert capsys.readouterr().err == ""
