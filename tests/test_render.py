"""Every table the tool prints is drawn by one renderer: aligned text or Markdown."""

from __future__ import annotations

import onnxflops
from helpers import model, node, weight
from onnxflops.results import markdown_table, text_table


def test_text_columns_are_left_numbers_right_and_rules_frame_the_rows():
    lines = text_table(["op", "MACs"], [["Conv", "12"], ["MatMul", "3456"]], left=1, rules=True)
    assert lines == ["op      MACs",
                     "------  ----",
                     "Conv      12",
                     "MatMul  3456",
                     "------  ----"]


def test_a_note_column_is_left_aligned_and_trailing_spaces_are_cut():
    lines = text_table(["a", "n", ""], [["x", "1", "long note"], ["yy", "22", ""]], left=1,
                       note=True)
    assert lines == ["a    n", "x    1  long note", "yy  22"]


def test_rows_without_a_header_align_alike():
    assert text_table(None, [["Relu", "activation", "numel"], ["Conv", "contraction", "k"]],
                      left=3) == ["Relu  activation   numel", "Conv  contraction  k"]


def test_markdown_escapes_a_pipe_in_a_cell():
    assert markdown_table(["node", "MACs"], [["a|b", "7"]], left=1) == [
        "| node | MACs |", "|---|---:|", "| a\\|b | 7 |"]


def test_a_node_named_with_a_pipe_keeps_the_report_markdown_table_whole():
    m = model([node("MatMul", ["x", "w"], ["y|z"])], {"x": [2, 3]}, [weight("w", (3, 4))])
    row = [line for line in onnxflops.count(m).to_markdown().splitlines() if "MatMul" in line][0]
    # 2·3·4 = 24 MACs; eight columns, so nine unescaped bars
    assert row.startswith("| y\\|z | MatMul | 2x4 | 24 |")
    assert row.replace("\\|", "").count("|") == 9
