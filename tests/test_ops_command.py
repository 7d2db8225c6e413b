"""`onnxflops ops`: the cost table as a reference, in text and JSON."""

from __future__ import annotations

import json

import onnx.defs

from onnxflops.cli import main
from onnxflops.costs.contraction import conv


def run(capsys, *argv):
    code = main(["ops", *argv])
    out, _ = capsys.readouterr()
    assert code == 0
    return out


def test_json_lists_every_rule_with_the_four_keys(capsys):
    rows = json.loads(run(capsys, "--json"))
    assert all(set(r) == {"domain", "op_type", "category", "formula"} for r in rows)
    by_key = {(r["domain"], r["op_type"]): r for r in rows}
    assert by_key[("", "Conv")] == {"domain": "", "op_type": "Conv", "category": "contraction",
                                    "formula": conv.__doc__.strip().splitlines()[0]}
    standard = {s.name for s in onnx.defs.get_all_schemas() if s.domain == ""}
    assert standard <= {op for domain, op in by_key if domain == ""}
    for key in [("com.microsoft", "FusedConv"), ("com.microsoft", "MatMulNBits"),
                ("ai.onnx.ml", "TreeEnsemble"), ("", "QLinearConv")]:
        assert by_key[key]["formula"]
    assert len(by_key) == len(rows)


def test_domain_filter(capsys):
    rows = json.loads(run(capsys, "--json", "--domain", "ai.onnx.ml"))
    assert rows and {r["domain"] for r in rows} == {"ai.onnx.ml"}
    default = json.loads(run(capsys, "--json", "--domain", "ai.onnx"))
    assert {r["domain"] for r in default} == {""}


def test_text_table_shows_conventions_and_one_line_per_op(capsys):
    out = run(capsys)
    lines = out.splitlines()
    assert lines[0].startswith("Conventions: default: 2·MACs")
    conv_line = next(line for line in lines if line.split()[:1] == ["Conv"])
    assert "contraction" in conv_line and conv.__doc__.strip().splitlines()[0] in conv_line
    assert any(line.startswith("com.microsoft::SkipLayerNormalization ") for line in lines)
    count = len(json.loads(run(capsys, "--json")))
    assert lines[-1] == f"{count} ops"
