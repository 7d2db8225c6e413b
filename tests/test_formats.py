"""One formats module writes every result: tables that fit, wrapped HTML, rows that carry new
fields, a DataFrame, the notebook view, and the one-screen summary of a count."""

from __future__ import annotations

import csv
import io
import json
import sys

import onnx
import pytest

import onnxflops
from helpers import model, node, weight
from onnxflops import formats
from onnxflops.cli import main
from onnxflops.formats import Rows, elide, html_table, text_table
from onnxflops.results import framework_names


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def mlp() -> onnx.ModelProto:
    """x[2,3] @ w[3,4], then Relu: 2·3·4 = 24 MACs, 48 FLOPs; Relu 2·4 = 8 FLOPs; 12 params.
    Read: x 6·4 B + w 12·4 B = 72 B, then h 32 B; written: h 32 B, y 32 B."""
    return model([node("MatMul", ["x", "w"], ["h"], name="fc"),
                  node("Relu", ["h"], ["y"], name="act")], {"x": [2, 3]}, [weight("w", (3, 4))])


def scoped(op_type: str, inputs, outputs, scopes: list[str], name: str) -> onnx.NodeProto:
    """A node as torch's dynamo exporter names it: its module path in the name-scope metadata."""
    n = node(op_type, inputs, outputs, name=name)
    n.metadata_props.add(key="pkg.torch.onnx.name_scopes", value=str(["", *scopes, op_type]))
    return n


def wrapped_encoder() -> onnx.ModelProto:
    """Two layers of a torch encoder called through a wrapper (`module.`), then a top-level Relu.
    Each MatMul x[2,4] @ w[4,4]: 2·4·4 = 32 MACs; the Relu 2·4 = 8 FLOPs."""
    path = ["module", "module.encoder", "module.encoder.layer"]
    return model([scoped("MatMul", ["x", "w0"], ["h0"], [*path, "module.encoder.layer.0"], "m0"),
                  scoped("MatMul", ["h0", "w1"], ["h1"], [*path, "module.encoder.layer.1"], "m1"),
                  node("Relu", ["h1"], ["y"], name="act")],
                 {"x": [2, 4]}, [weight("w0", (4, 4)), weight("w1", (4, 4))])


class TestTextTables:
    def test_a_long_name_is_elided_in_the_middle_to_fit_the_width(self):
        name = "/encoder/layer.11/attention/self/MatMul"  # 39 characters
        # 39 + 2 + 6 + 2 + 4 = 53 columns; 13 too many for 40, so the name keeps 26: the first
        # 13 characters, the ellipsis, the last 12.
        lines = text_table(["node", "op", "MACs"], [[name, "MatMul", "12"]], width=40)
        assert lines == ["node                        op      MACs",
                         "/encoder/laye…/self/MatMul  MatMul    12"]
        assert max(map(len, lines)) == 40

    def test_the_widest_name_column_is_cut_first_and_none_below_16(self):
        rows = [["n" * 30, "o" * 20, "1"]]
        # 30 + 20 + 1 + 4 = 55 > 40: the node column is cut first, to no less than 16 (-> 41),
        # then the op column by the 1 still over (20 -> 19). A cut name keeps one more
        # character of its head than of its tail.
        lines = text_table(None, rows, width=40)
        assert lines == ["n" * 8 + "…" + "n" * 7 + "  " + "o" * 9 + "…" + "o" * 9 + "  1"]

    def test_a_table_that_cannot_fit_keeps_its_numbers_whole(self):
        lines = text_table(["name", "FLOPs"], [["a" * 20, "9" * 50]], left=1, width=30)
        assert lines[1] == "a" * 8 + "…" + "a" * 7 + "  " + "9" * 50

    def test_without_a_width_nothing_is_cut(self):
        assert text_table(None, [["x" * 200, "1"]]) == ["x" * 200 + "  1"]

    def test_elide_keeps_short_names(self):
        assert elide("Conv", 16) == "Conv"
        assert elide("abcdefghij", 5) == "ab…ij"

    def test_a_count_by_node_with_long_names_fits_120_columns(self):
        long = "/" + "/".join(f"block{i}" for i in range(30)) + "/MatMul"
        m = model([node("MatMul", ["x", "w"], ["y"], name=long)], {"x": [2, 3]},
                  [weight("w", (3, 4))])
        table = onnxflops.count(m).to_table("node").splitlines()
        rows = [line for line in table if "MatMul" in line]
        assert len(rows) == 1 and len(rows[0]) <= 120 and "…" in rows[0]
        assert rows[0].startswith("/block0/block1") and "block29/MatMul" in rows[0]
        # the JSON, CSV and Markdown keep the whole name
        assert long in onnxflops.count(m).to_csv() and long in onnxflops.count(m).to_markdown()


def test_profiles_node_table_fits_120_columns_and_its_page_wraps_names():
    pytest.importorskip("onnxruntime")
    from onnxflops.html.page import to_html

    long = "/" + "/".join(f"block{i}" for i in range(20))
    m = model([node("MatMul", ["x", "w"], ["h"], name=long + "/MatMul"),
               node("Relu", ["h"], ["y"], name=long + "/Relu")], {"x": [2, 3]},
              [weight("w", (3, 4))])
    prof = onnxflops.profile(m, runs=2, warmup=0, profile_runs=1, threads=1, ceilings=False)
    table = prof.to_text().split("\n\n")[1].splitlines()
    assert table[0].split() == ["node", "op", "FLOPs", "time", "ms", "latency", "%", "FLOPs",
                                "%", "FLOP/s", "%", "of", "roof", "FLOP/B", "bound"]
    assert max(map(len, table)) <= 120 and any("…" in line for line in table)
    page = to_html([prof])
    # rows: per op type the executed nodes' FLOPs, which sum to the count's 2·3·4·2 + 2·4 = 56
    ops = prof.rows(by="op")
    assert ops.columns == ["op", "nodes", "flops", "bytes", "time_ms", "latency_share",
                           "flops_share", "achieved_flops_per_s", "intensity"]
    assert sum(r["flops"] for r in ops) == 56 and prof.rows().columns[:3] == ["model", "name",
                                                                              "op_type"]
    assert prof._repr_html_().count("<table") == 1
    # per module one level down (`block0`), as a count's by_layer(depth=1)
    modules = prof.by_layer(depth=1)
    assert list(modules) == ["block0"] and modules["block0"].flops == 56
    # the name may wrap after each '/', and the numbers never do
    assert '<td class="text">/<wbr>block0/<wbr>block1/<wbr>block2/<wbr>' in page
    assert "white-space:nowrap" in page


class TestHtml:
    def test_text_cells_wrap_after_separators_and_are_escaped(self):
        table = html_table(["node", "op", "FLOPs"], [["a<b/c_d+e", "Conv", "1.2 K"]], left=2)
        assert table == ('<table class="onnxflops"><thead><tr><th class="text">node</th>'
                         '<th class="text">op</th><th>FLOPs</th></tr></thead><tbody><tr>'
                         '<td class="text">a&lt;b/<wbr>c_<wbr>d+<wbr>e</td><td class="text">Conv'
                         '</td><td>1.2 K</td></tr></tbody></table>')
        assert "td.text,table.onnxflops th.text{text-align:left;white-space:normal;" \
               "overflow-wrap:break-word}" in formats.TABLE_CSS

    def test_the_notebook_view_of_a_count_is_its_table_by_op_type(self):
        page = onnxflops.count(mlp())._repr_html_()
        assert page.startswith('<div class="onnxflops"><style>')
        # MatMul 48 of 56 FLOPs: 85.7%
        assert ('<tr><td class="text">MatMul</td><td class="text">1</td><td>24</td><td>48</td>'
                '<td>85.7%</td><td>12</td><td>72 B</td><td>32 B</td></tr>') in page
        assert "<p>test  [x=2x3]  convention=default<br>MACs 24  FLOPs 56" in page


class TestRows:
    def test_columns_come_first_then_fields_the_records_add_but_hidden_ones(self):
        rows = Rows(["a"], [{"a": 1, "b": 2, "secret": 0}, {"a": 3, "c": 4}], hidden=("secret",))
        assert rows.columns == ["a", "b", "c"] and rows == [{"a": 1, "b": 2, "secret": 0},
                                                            {"a": 3, "c": 4}]
        assert formats.csv_text(rows) == "a,b,c\n1,2,\n3,,4\n"
        assert formats.csv_text(Rows(["a", "b"], [])) == "a,b\n"

    def test_a_field_a_node_gains_reaches_csv_and_json_with_no_edit_to_the_formats(self,
                                                                                  monkeypatch):
        from onnxflops.results import NodeReport

        plain = NodeReport.to_dict
        monkeypatch.setattr(NodeReport, "to_dict", lambda n: {**plain(n), "foldable": 0})
        report = onnxflops.count(mlp())
        rows = list(csv.DictReader(io.StringIO(report.to_csv())))
        assert [r["foldable"] for r in rows] == ["0", "0"]
        assert json.loads(report.to_json())["nodes"][0]["foldable"] == 0

    def test_rows_by_op_type_hold_exact_numbers(self):
        rows = onnxflops.count(mlp()).rows(by="op")
        assert rows == [
            {"op": "MatMul", "nodes": 1, "macs": 24, "flops": 48, "int_ops": 0, "params": 12,
             "buffers": 0, "bytes_read": 72, "bytes_written": 32},
            {"op": "Relu", "nodes": 1, "macs": 0, "flops": 8, "int_ops": 0, "params": 0,
             "buffers": 0, "bytes_read": 32, "bytes_written": 32}]
        csv_rows = onnxflops.count(mlp()).to_csv(by="op").splitlines()
        assert csv_rows[1] == "MatMul,1,24,48,0,12,0,72,32"

    def test_an_unknown_grouping_is_a_clear_error(self):
        with pytest.raises(ValueError, match="by='module': one of node, op, layer, category"):
            onnxflops.count(mlp()).rows(by="module")

    def test_to_pandas_is_the_rows(self):
        pytest.importorskip("pandas")
        frame = onnxflops.count(mlp()).to_pandas(by="op")
        assert list(frame.columns) == ["op", "nodes", "macs", "flops", "int_ops", "params",
                                       "buffers", "bytes_read", "bytes_written"]
        assert frame["flops"].tolist() == [48, 8] and frame["flops"].sum() == 56
        assert list(onnxflops.count(mlp()).to_pandas()["name"]) == ["fc", "act"]

    def test_to_pandas_without_pandas_names_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "pandas", None)
        with pytest.raises(ImportError, match=r"^to_pandas\(\) needs pandas: pip install "
                                              r"'onnxflops\[pandas\]'$"):
            onnxflops.count(mlp()).to_pandas()


class TestSummary:
    def test_print_shows_one_screen_the_totals_top_op_types_and_uncosted(self):
        assert str(onnxflops.count(mlp())) == "\n".join([
            "=" * 78,
            "test  [x=2x3]  convention=default",
            "=" * 78,
            "op type  MACs  FLOPs  % FLOPs  params",
            "-------  ----  -----  -------  ------",
            "MatMul     24     48    85.7%      12",  # 48 / 56
            "Relu        0      8    14.3%       0",  # 8 / 56
            "=" * 78,
            "MACs            24",
            "FLOPs           56",
            "params          12",
            "buffers         0",
            "bytes read      104 B",
            "bytes written   64 B",
            "nodes           2",
            "=" * 78,
            "every node costed",
            "tables: report.to_table(by='node'|'op'|'layer'|'category'),",
            "        report.by_layer(depth=N), report.rows(by=...), report.to_pandas(by=...)"])

    def test_the_summary_shows_work_on_weights_alone(self):
        # W·W (16 multiplies on a 4×4 weight) runs on weights alone, then x[2,4]·(W·W).
        m = model([node("Mul", ["W", "W"], ["W2"]), node("MatMul", ["x", "W2"], ["y"])],
                  {"x": [2, 4]}, [weight("W", (4, 4))])
        assert "foldable        16 FLOPs on weights or literal tables alone, in the totals (1 " \
            "nodes a runtime computes once)" in str(onnxflops.count(m))

    def test_the_repr_is_one_line(self):
        assert repr(onnxflops.count(mlp())) == (
            "Report(model='test', macs=24, flops=56, params=12, nodes=2, uncosted=0)")

    def test_the_summary_lists_the_ten_costliest_op_types_and_the_uncosted(self):
        # Twelve elementwise ops in a chain on x[2,3], 6 FLOPs each (of 72: 8.3%), and Mystery,
        # which has no rule: 13 op types, 10 listed.
        ops = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Log", "Sqrt", "Sin", "Cos",
               "Floor", "Ceil"]
        nodes = [node(op, [f"t{i}"], [f"t{i + 1}"], name=f"n{i}") for i, op in enumerate(ops)]
        nodes.append(onnx.helper.make_node("Mystery", ["t12"], ["y"], domain="example.custom",
                                           name="odd"))
        m = model(nodes, {"t0": [2, 3]}, outputs=["y"])
        m.opset_import.append(onnx.helper.make_opsetid("example.custom", 1))
        with pytest.warns(Warning):
            text = str(onnxflops.count(m))
        assert "Cos         0      6     8.3%       0\n... and 3 more op types" in text
        assert "UNCOSTED: 1 node(s), the totals exclude them:\n  odd (Mystery): no cost rule" \
            in text
        assert len(text.splitlines()) < 40 and max(map(len, text.splitlines())) <= 90


class TestDepth:
    def test_layers_sum_at_each_depth_in_the_frameworks_names(self):
        report = onnxflops.count(wrapped_encoder())
        assert list(report.by_layer()) == ["module.encoder.layer.0", "module.encoder.layer.1",
                                           ""]
        one, two, three = (report.by_layer(depth=d) for d in (1, 2, 3))
        assert {k: v.macs for k, v in one.items()} == {"encoder": 64, "": 0}  # 32 + 32
        assert {k: v.macs for k, v in two.items()} == {"encoder.layer": 64, "": 0}
        assert {k: v.macs for k, v in three.items()} == {"encoder.layer.0": 32,
                                                         "encoder.layer.1": 32, "": 0}
        assert three[""].flops == 8
        assert report.by_layer(depth=9) == three  # no path is deeper

    def test_a_bad_depth_is_a_clear_error(self):
        with pytest.raises(ValueError, match="depth=0: a whole number from 1"):
            onnxflops.count(wrapped_encoder()).by_layer(depth=0)
        with pytest.raises(ValueError, match="depth=2 sums layers: it goes with by='layer'"):
            onnxflops.count(wrapped_encoder()).rows(by="op", depth=2)

    @pytest.mark.parametrize("layers, names", [
        # Keras 3 through tf2onnx: the model's scope goes, and each layer's `_N` suffix.
        (["functional_1/encoder_1", "functional_1/dense_1", "functional_1/dense_1_2"],
         [["encoder"], ["dense"], ["dense_1"]]),
        (["classifier_1/backbone_1/fc1_1"], [["backbone", "fc1"]]),
        (["model/dense"], [["dense"]]),  # a TF scope without suffixes keeps its names
        (["module.a.b", "module"], [["a", "b"], []]),  # one wrapper around the whole model
        (["module.a", "b"], [["module", "a"], ["b"]]),  # a submodule named `module` stays
        ([""], [[]]),
    ])
    def test_framework_names(self, layers, names):
        assert list(framework_names(layers).values()) == names

    def test_count_depth_on_the_command_line(self, capsys, onnx_file):
        path = onnx_file(wrapped_encoder())
        code, out, _ = run(capsys, "count", path, "--depth", "3")
        assert code == 0
        table = out.split("\n\n")[1].splitlines()
        assert table[0].split() == ["layer", "nodes", "MACs", "FLOPs", "%", "FLOPs", "params",
                                    "read", "written"]
        assert [line.split()[:3] for line in table[2:5]] == [
            ["encoder.layer.0", "1", "32"], ["encoder.layer.1", "1", "32"], ["(top", "level)", "1"]]
        _, out, _ = run(capsys, "count", path, "--depth", "1", "--csv")
        # encoder: 2 × 32 MACs, 32 params; reads x or h0 (8 floats, 32 B) and a 4x4 weight
        # (64 B) twice: 192 B; writes h0 and h1, 32 B each.
        assert out.splitlines()[1:] == ["encoder,2,64,128,0,32,0,192,64",
                                        ",1,0,8,0,0,0,32,32"]

    def test_count_depth_errors_are_one_line(self, capsys, onnx_file):
        path = onnx_file(wrapped_encoder())
        code, out, err = run(capsys, "count", path, "--depth", "2", "--by", "op")
        assert code == 2 and out == "" and err == (
            "onnxflops: error: --depth sums layers: it goes with --by layer, not --by op\n")
        with pytest.raises(SystemExit) as done:
            main(["count", path, "--depth", "0"])
        _, err = capsys.readouterr()
        assert done.value.code == 2 and err.count("\n") == 1
        assert "argument --depth: '0' is not a whole number from 1" in err


class TestCommands:
    def test_count_csv_by_a_grouping_and_by_default_per_node(self, capsys, onnx_file):
        path = onnx_file(mlp())
        assert run(capsys, "count", path, "--csv")[1].splitlines()[0].startswith(
            "name,op_type,layer,category,macs")
        assert run(capsys, "count", path, "--csv", "--by", "op")[1].splitlines()[1] == \
            "MatMul,1,24,48,0,12,0,72,32"

    def test_html_is_written_beside_the_table_in_every_command(self, capsys, onnx_file,
                                                                tmp_path):
        path = onnx_file(mlp())
        page = tmp_path / "count.html"
        code, out, _ = run(capsys, "count", path, "--html", str(page))
        assert code == 0 and out.startswith("model.onnx  [x=2x3]")
        text = page.read_text()
        assert text.startswith("<!DOCTYPE html>") and '<td class="text">MatMul</td>' in text
        code, out, _ = run(capsys, "compare", path, path, "--html", "-")
        assert code == 0 and out.count("<!DOCTYPE html>") == 1 and "SAME: MACs" in out

    def test_an_html_target_that_cannot_be_written_fails_first(self, capsys, onnx_file,
                                                               tmp_path):
        code, out, err = run(capsys, "count", onnx_file(mlp()), "--html",
                             str(tmp_path / "absent" / "x.html"))
        assert code == 2 and out == "" and "does not exist" in err

    def test_a_comparisons_rows(self):
        result = onnxflops.compare(mlp(), mlp())
        assert result.rows(by="total")[:2] == [{"quantity": "macs", "a": 24, "b": 24},
                                               {"quantity": "flops", "a": 56, "b": 56}]
        assert [(r["op"], r["flops_a"], r["flops_b"]) for r in result.rows(by="op")] == [
            ("MatMul", 48, 48), ("Relu", 8, 8)]

    def test_compare_writes_every_format(self, capsys, onnx_file):
        path = onnx_file(mlp())
        code, out, _ = run(capsys, "compare", path, path, "--csv")
        assert code == 0
        assert out.splitlines() == ["a,b,status,macs_a,macs_b,params_a,params_b,buffers_a,"
                                    "buffers_b,flops_a,flops_b,notes",
                                    "(top level),(top level),same,24,24,12,12,0,0,56,56,"]
        markdown = run(capsys, "compare", path, path, "--markdown")[1]
        assert "| total | a | b | b − a |" not in markdown
        assert "| macs | 24 | 24 | 0 |" in markdown
        assert json.loads(run(capsys, "compare", path, path, "--json")[1])["same"] is True


RENDERING_COMMANDS = ("count", "compare", "profile", "llm", "report", "ops")


def _parser(command: str):
    import argparse
    import importlib

    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(f"onnxflops.commands.{command}").register(sub)
    return sub.choices[command]


def _options(command: str) -> dict:
    return _parser(command)._option_string_actions


class TestFormatFlags:
    """Every format option is one definition (commands/common.py) made from onnxflops.formats."""

    @pytest.mark.parametrize("command", RENDERING_COMMANDS)
    def test_each_format_is_an_option_of_every_command_that_renders(self, command):
        options = _options(command)
        for fmt in ("json", "csv", "markdown"):  # --FMT [FILE]: no FILE is standard output
            action = options[f"--{fmt}"]
            assert (action.nargs, action.const) == ("?", "-"), fmt
        assert options["--html"].nargs is None  # --html FILE
        # profile and report convert a framework model as count does (llm reads HF configs)
        assert ("--exporter" in options) == (command not in ("llm", "ops"))

    def test_a_format_added_to_formats_is_offered_by_every_command(self, monkeypatch, capsys,
                                                                    onnx_file, tmp_path):
        monkeypatch.setattr(formats, "_WRITERS", dict(formats._WRITERS))

        @formats.output("tsv", "tab-separated values, one row per {rows}", reads="rows")
        def to_tsv(result, **options):
            rows = result.rows(**options)
            return "\n".join("\t".join(str(r.get(c, "")) for c in rows.columns)
                             for r in [dict(zip(rows.columns, rows.columns)), *rows]) + "\n"

        for command in RENDERING_COMMANDS:
            assert _options(command)["--tsv"].nargs == "?", command
        path = onnx_file(mlp())
        code, out, _ = run(capsys, "count", path, "--tsv", "--by", "op")
        # One row per op: MatMul 24 MACs, 48 FLOPs, 12 params (as the CSV rows above).
        assert code == 0 and out.splitlines()[1].split("\t")[:4] == ["MatMul", "1", "24", "48"]
        target = tmp_path / "count.tsv"
        code, out, _ = run(capsys, "count", path, "--tsv", str(target))
        assert code == 0 and out.startswith("model.onnx  [x=2x3]")  # the table stays
        assert target.read_text().splitlines()[1].split("\t")[:2] == ["fc", "MatMul"]

    def test_a_format_to_a_file_keeps_the_table_and_dash_is_standard_output(self, capsys,
                                                                            onnx_file, tmp_path):
        path = onnx_file(mlp())
        target = tmp_path / "count.json"
        code, out, _ = run(capsys, "count", path, "--json", str(target))
        assert code == 0 and out.startswith("model.onnx  [x=2x3]")
        assert json.loads(target.read_text())["total"]["macs"] == 24
        code, out, _ = run(capsys, "count", path, "--json", "-")
        assert code == 0 and json.loads(out)["total"]["flops"] == 56
        code, out, _ = run(capsys, "compare", path, path, "--markdown", str(tmp_path / "c.md"),
                           "--csv")
        assert code == 0 and out.splitlines()[1].startswith("(top level),(top level),same,24")
        assert "| macs | 24 | 24 | 0 |" in (tmp_path / "c.md").read_text()

    def test_the_cost_table_is_a_result_like_any_other(self, capsys):
        code, out, _ = run(capsys, "ops", "--csv", "--domain", "ai.onnx.ml")
        lines = out.splitlines()
        assert code == 0 and lines[0] == "domain,op_type,category,formula"
        assert all(line.startswith("ai.onnx.ml,") for line in lines[1:]) and len(lines) > 5

    def test_the_old_spelling_with_the_flag_before_the_model_still_works(self, capsys,
                                                                         onnx_file):
        code, out, _ = run(capsys, "count", "--json", onnx_file(mlp()))
        assert code == 0 and json.loads(out)["total"]["macs"] == 24

    def test_two_formats_to_standard_output_are_one_line(self, capsys, onnx_file):
        code, out, err = run(capsys, "count", onnx_file(mlp()), "--json", "--csv")
        assert code == 2 and out == "" and err == (
            "onnxflops: error: --json and --csv both print to standard output: give all but "
            "one a FILE\n")
