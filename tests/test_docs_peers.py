"""docs/peers.md stays what bench/peers.py prints: the command it names is the script's, its tables
hold every model and tool of the script, and its onnxflops rows are what onnxflops counts today
(the peers themselves are not installed here: their rows are the page's record of one run)."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "docs" / "peers.md"
SCRIPT = ROOT / "bench" / "peers.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("bench_peers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)  # imports no framework: each model's builder does
    return module


peers = _load_script()


def page_tables() -> dict:
    return peers.parse_table(PAGE.read_text(encoding="utf-8"))


def test_the_command_the_page_names_is_the_scripts():
    commands = re.findall(r"^\$ (python bench/peers\.py.*)$", PAGE.read_text(encoding="utf-8"),
                          re.M)
    assert commands, "docs/peers.md names no `$ python bench/peers.py` command"
    for command in commands:
        words = shlex.split(command)
        assert (ROOT / words[1]) == SCRIPT
        peers.parser().parse_args(words[2:])  # exits (fails the test) on an unknown option


def test_the_page_has_a_table_for_each_model_with_a_row_for_each_tool():
    tables = page_tables()
    assert list(tables) == list(peers.MODELS)
    for model, rows in tables.items():
        assert list(rows) == [*peers.TOOLS, *peers.ONNXFLOPS_ROWS], model


def test_a_table_reads_back_the_figures_it_was_written_with():
    results = {"gru": {"fvcore": {"flops": 512, "params": 1_971_714, "skipped": ["aten::gru"]},
                       "thop": {"error": "RuntimeError: a | b"},
                       "onnxflops": {"macs": 44_040_704, "flops": 88_638_466,
                                     "params": 1_971_714}}}
    text = peers.markdown(results)
    assert "| thop | | | | RuntimeError: a / b |" in text
    assert peers.parse_table(text) == {"gru": {
        "fvcore": {"macs": None, "flops": 512, "params": 1_971_714},
        "thop": {"macs": None, "flops": None, "params": None},
        "onnxflops": {"macs": 44_040_704, "flops": 88_638_466, "params": 1_971_714}}}


# The three models cheapest to convert; ViT-B/16 and BERT-base take minutes on a small machine.
@pytest.mark.slow
@pytest.mark.parametrize("name", ["gru", "resnet50", "detector"])
def test_the_pages_onnxflops_rows_are_what_onnxflops_counts(name):
    pytest.importorskip("torchvision")
    import torch

    spec = peers.MODELS[name]
    torch.manual_seed(peers.SEED)
    counted = peers.onnxflops_counts(spec.build().eval(), spec.inputs())
    shown = page_tables()[name]
    for row, figures in counted.items():
        assert shown[row] == {key: figures.get(key) for key in ("macs", "flops", "params")}, row
