"""The house's three seams, each held to its promise by doing what it promises: a new op is its
cost rule and one line of ops.py; a new model kind is one entry of sources.KINDS and its
converter; a new output format is one function of formats.py, offered and written by every
command. And the op-family checks still find a family written out again."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxflops
from onnxflops import formats, ops, sources
from onnxflops.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- a new op: its cost rule plus one line of ops.py -------------------------------------------

# com.microsoft::ToyGelu, a Gelu of onnxruntime's domain that neither ONNX nor this package knows.
# Its rule prices it at 8 FLOPs per element; its one line of ops.py says its output has its
# input's shape (CONTRIB_SHAPE_KEEPING), from which the MatMul after it is shaped and costed.
TOY_RULE = '''

@ms_rule("ToyGelu", category=ACTIVATION)
def toy_gelu(n: Node) -> Cost:
    """8·numel(X)"""
    return Cost(flops=8 * n.input(0).numel)
'''
TOY_COUNT = """
import json, sys
import onnxflops
report = onnxflops.count(sys.argv[1])
print(json.dumps({"flops": report.total.flops, "macs": report.total.macs,
                  "uncosted": [u.reason for u in report.uncosted]}))
"""


def _toy_gelu_model() -> onnx.ModelProto:
    """x[2,3] → ToyGelu → h → MatMul w[3,4] → y: 6 elements × 8 FLOPs, then 2·3·4 = 24 MACs."""
    graph = helper.make_graph(
        [helper.make_node("ToyGelu", ["x"], ["h"], domain="com.microsoft", name="act"),
         helper.make_node("MatMul", ["h", "w"], ["y"], name="fc")], "toy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((3, 4), np.float32), "w")])
    return helper.make_model(graph, ir_version=8, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def _package_with_the_new_op(tmp_path: Path) -> Path:
    """A copy of the package with the new op's rule appended to its family's file and its name
    added to CONTRIB_SHAPE_KEEPING: no other edit."""
    copy = tmp_path / "package"
    shutil.copytree(ROOT / "onnxflops", copy / "onnxflops", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "converters"))
    with open(copy / "onnxflops" / "costs" / "contrib" / "activation.py", "a") as f:
        f.write(TOY_RULE)
    path = copy / "onnxflops" / "ops.py"
    text = path.read_text()
    edited = text.replace('CONTRIB_SHAPE_KEEPING = frozenset((\n',
                          'CONTRIB_SHAPE_KEEPING = frozenset((\n    "ToyGelu",\n', 1)
    assert edited.count("\n") == text.count("\n") + 1  # one line, where the family is written
    path.write_text(edited)
    return copy


def test_a_new_op_is_its_cost_rule_plus_one_line_of_ops(tmp_path):
    model_path = tmp_path / "toy.onnx"
    onnx.save(_toy_gelu_model(), model_path)
    package = _package_with_the_new_op(tmp_path)
    done = subprocess.run([sys.executable, "-c", TOY_COUNT, str(model_path)], cwd=package,
                          env={"PYTHONPATH": str(package), "PATH": ""}, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"flops": 8 * 6 + 2 * 24, "macs": 24, "uncosted": []}


def test_without_its_line_of_ops_the_new_op_leaves_what_reads_it_unshaped():
    # The same rule given to this package, whose ops.py lacks the line: ToyGelu is costed from
    # its input, but its output has no shape, and the MatMul reading it is not costed.
    def toy_gelu(n):
        """8·numel(X)"""
        return onnxflops.Cost(flops=8 * n.input(0).numel)

    with pytest.warns(onnxflops.UncostedWarning):
        report = onnxflops.count(_toy_gelu_model(), rules={("com.microsoft", "ToyGelu"): toy_gelu})
    assert (report.total.flops, report.total.macs) == (8 * 6, 0)
    assert [u.name for u in report.uncosted] == ["fc"]


# -- a new model kind: one entry of sources.KINDS plus its converter ---------------------------

def toy_mlp_to_onnx(widths, inputs, batch, exporter, keep_weights) -> onnx.ModelProto:
    """The toy format's converter: a .toy file is JSON {"widths": [w0, w1, ...]}, an MLP of
    MatMul(w_i × w_i+1) layers with Relu between them, over x[batch, w0]."""
    rows = (inputs or {}).get("x", (batch or 1, widths[0]))[0]
    nodes, weights, last = [], [], "x"
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        weights.append(numpy_helper.from_array(np.full((a, b), 0.5, np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [last, f"w{i}"], [f"h{i}"], name=f"fc{i}"))
        last = f"h{i}"
        if i < len(widths) - 2:
            nodes.append(helper.make_node("Relu", [last], [f"r{i}"], name=f"act{i}"))
            last = f"r{i}"
    graph = helper.make_graph(
        nodes, "toy", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, widths[0]])],
        [helper.make_tensor_value_info(last, TensorProto.FLOAT, [rows, widths[-1]])], weights)
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)])


TOY_KIND = sources.Kind(
    "toy MLP (.toy)", None, lambda s: sources._existing(s, (".toy",)),
    lambda path, unsafe: json.loads(Path(path).read_text())["widths"], toy_mlp_to_onnx,
    lambda widths: {"x": (None, widths[0])})
# [3, 4, 2] at batch 2: 2·3·4 + 2·4·2 = 40 MACs; 3·4 + 4·2 = 20 params; a Relu over 2·4.
TOY_MACS, TOY_PARAMS, TOY_FLOPS = 40, 20, 2 * 40 + 8


@pytest.fixture
def toy_file(tmp_path, monkeypatch):
    """A .toy model, with the toy kind added to the source table (and nowhere else)."""
    monkeypatch.setattr(sources, "KINDS", (*sources.KINDS, TOY_KIND))
    path = tmp_path / "mlp.toy"
    path.write_text(json.dumps({"widths": [3, 4, 2]}))
    return path


def test_a_new_model_kind_is_counted_converted_and_compared_through_the_table(toy_file,
                                                                              tmp_path, capsys):
    assert sources.kind_of(toy_file) is TOY_KIND and sources.needs_conversion(str(toy_file))
    total = onnxflops.count(toy_file, batch=2).total
    assert (total.macs, total.flops, total.params) == (TOY_MACS, TOY_FLOPS, TOY_PARAMS)
    code, out, _ = run(capsys, "count", toy_file, "--batch", "2", "--json")
    assert code == 0 and json.loads(out)["total"]["macs"] == TOY_MACS
    code, out, _ = run(capsys, "count", toy_file, "--input", "x=5x3", "--json")
    assert code == 0 and json.loads(out)["total"]["macs"] == 5 * (12 + 8)
    written = tmp_path / "mlp.onnx"
    code, out, _ = run(capsys, "convert", toy_file, "--batch", "2", "-o", written)
    assert code == 0 and onnxflops.count(written).total.macs == TOY_MACS
    code, out, _ = run(capsys, "compare", toy_file, written, "--batch", "2", "--json")
    assert code == 0 and json.loads(out)["same"] is True


@pytest.mark.parametrize("command", ["count", "profile", "convert", "compare", "report"])
def test_a_new_model_kind_is_in_the_help_of_every_command_taking_a_model(toy_file, capsys,
                                                                         command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps it
    assert "toy MLP (.toy)" in help_text and "Keras model file (.keras, .h5, .hdf5)" in help_text
    assert "nn.Module" not in help_text  # an object the Python API takes, not a MODEL


def test_a_new_model_kind_is_profiled_through_the_table(toy_file, capsys):
    pytest.importorskip("onnxruntime")
    result = onnxflops.profile(toy_file, batch=2, runs=1, warmup=0, profile_runs=1,
                               ceilings=False)
    assert (result.count.total.macs, result.flops) == (TOY_MACS, TOY_FLOPS)
    code, out, _ = run(capsys, "profile", toy_file, "--batch", "2", "--runs", "1", "--warmup",
                       "0", "--profile-runs", "1", "--no-ceilings", "--json")
    assert code == 0 and json.loads(out)["flops"] == TOY_FLOPS


# -- a new output format: one function of formats.py ------------------------------------------

@pytest.fixture
def tsv(monkeypatch):
    """A tab-separated format, registered by its one function (and gone after the test)."""
    monkeypatch.setattr(formats, "_WRITERS", dict(formats._WRITERS))

    @formats.output("tsv", "tab-separated values, one row per {rows}", reads="rows")
    def to_tsv(result, **options):
        rows = result.rows(**options)
        return "".join("\t".join("" if v is None else str(v) for v in line) + "\n"
                       for line in [rows.columns, *([r.get(c) for c in rows.columns]
                                                    for r in rows)])
    return "tsv"


def test_a_new_format_reaches_the_survey_by_its_suffix(tsv, tmp_path, capsys):
    """`survey -o s.tsv`: the rows kept in s.jsonl beside it, s.tsv written by the format."""
    from test_survey import counted_row

    from onnxflops.survey import COLUMNS, RowStore, judge

    out = tmp_path / "s.tsv"
    RowStore(out).append(judge(counted_row("timm:a")))
    RowStore(out).append(judge(counted_row("timm:b", macs=1)))
    header, *lines = [line.split("\t") for line in out.read_text().splitlines()]
    assert header == list(COLUMNS)
    assert [(line[0], line[2], line[COLUMNS.index("verdict")]) for line in lines] == [
        ("timm:a", "100", "exact"), ("timm:b", "1", "differs")]
    assert RowStore(out).done == {"timm:a", "timm:b"} and (tmp_path / "s.jsonl").exists()
    with pytest.raises(SystemExit):
        main(["survey", "--help"])
    assert ".tsv" in capsys.readouterr().out


def _hand_llm_report(*unused, **unused_options):
    """An LLM report built by hand (tests/test_llm.py's), in place of a model's export."""
    from test_llm import _cache_inputs, _hand_report, _windowed_phase

    from onnxflops.serving.cache import kv_layers

    config = {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 4}
    return _hand_report(_windowed_phase(4), prompt=2, generate=6, batch=2,
                        kv_layers=kv_layers(_cache_inputs(2, 2, 8), config, 16, 2, 8))


def _commands(model: str, profiled: bool) -> dict[str, list[str]]:
    """Each rendering command, run cheaply on `model`."""
    timing = ["--runs", "1", "--warmup", "0", "--profile-runs", "1", "--no-ceilings"]
    commands = {"count": ["count", model], "compare": ["compare", model, model],
                "llm": ["llm", "config.json", "--prompt", "2", "--generate", "6"],
                "ops": ["ops", "--domain", "ai.onnx.ml"]}
    if profiled:
        commands |= {"profile": ["profile", model, *timing],
                     "report": ["report", model, *timing, "--output", "-"]}
    return commands


def test_a_new_format_is_one_function_that_every_command_offers_and_writes(tsv, tmp_path,
                                                                          monkeypatch, capsys,
                                                                          onnx_file):
    import onnxflops.serving

    from test_formats import RENDERING_COMMANDS, _options, mlp

    monkeypatch.setattr(onnxflops.serving, "llm", _hand_llm_report)
    profiled = True
    try:
        import onnxruntime  # noqa: F401
    except ImportError:  # the core install: profile and report are offered, not run
        profiled = False
    commands = _commands(onnx_file(mlp()), profiled)
    assert set(commands) == set(RENDERING_COMMANDS) - ({"profile", "report"} - set(commands))
    for command in RENDERING_COMMANDS:
        assert _options(command)["--tsv"].nargs == "?", command
    for command, argv in commands.items():
        target, rows = tmp_path / f"{command}.tsv", tmp_path / f"{command}.csv"
        code, _, err = run(capsys, *argv, "--tsv", target, "--csv", rows)
        assert code == 0, (command, err)
        # The same rows as the CSV the same run wrote, cell for cell.
        assert [line.split("\t") for line in target.read_text().splitlines()] == \
            list(csv.reader(io.StringIO(rows.read_text()))), command
        assert len(target.read_text().splitlines()) > 1, command
        code, out, _ = run(capsys, *argv, "--tsv")  # no FILE: in place of the table
        if command not in ("profile", "report"):  # their rows hold times: runs differ
            assert code == 0 and out == target.read_text(), command


# -- the op-family checks find what they look for ---------------------------------------------

def _planted_package(tmp_path: Path, planted: str) -> Path:
    """A package of ops.py and one stage module holding `planted`, and a cost rule's op list
    (where lists of ops belong)."""
    package = tmp_path / "onnxflops"
    (package / "stage").mkdir(parents=True)
    (package / "costs").mkdir()
    shutil.copy(ROOT / "onnxflops" / "ops.py", package / "ops.py")
    (package / "stage" / "module.py").write_text(f"X = 1\nPLANTED = {planted}\n")
    (package / "costs" / "rule.py").write_text('PRICED = ("Relu", "Sigmoid", "Tanh")\n')
    return package


@pytest.mark.parametrize("check, planted, found", [
    ("test_no_op_family_is_written_twice", '{"SequenceMap", "If", "Scan", "Loop"}',
     "stage/module.py:2 writes HOLDS_SUBGRAPHS"),
    ("test_no_op_family_is_written_twice", '("Transpose", "Reshape", "Squeeze", "Unsqueeze", '
     '"Flatten", "Identity")', "stage/module.py:2 writes VIEWS"),
    ("test_no_module_writes_a_list_of_ops_of_its_own", '["Relu", "Sigmoid"]',
     "stage/module.py:2 ['Relu', 'Sigmoid']"),
])
def test_the_op_family_checks_find_a_family_written_again(tmp_path, monkeypatch, check,
                                                         planted, found):
    import test_values

    monkeypatch.setattr(test_values, "PACKAGE", _planted_package(tmp_path, planted))
    with pytest.raises(AssertionError) as failed:
        getattr(test_values, check)()
    assert found in str(failed.value)
    # A list that is not of ops, or a family's own home, is never found.
    monkeypatch.setattr(test_values, "PACKAGE",
                        _planted_package(tmp_path / "clean", '("sum", "mean")'))
    getattr(test_values, check)()

