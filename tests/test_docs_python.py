"""docs/python.md runs: each python block in turn, in one namespace, and the text block after it is
what the block prints. `python tests/test_docs_python.py --write` fills the text blocks in."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).parent.parent / "docs" / "python.md"
# A python block, then (optionally) the text block that shows its output.
_BLOCK = re.compile(r"```python\n(?P<code>.*?)```\n(?:\n```text\n(?P<out>.*?)```\n)?", re.S)


def run_page(text: str) -> list[tuple[re.Match, str]]:
    """Every python block of the page with what it printed, run in order in one namespace."""
    namespace: dict = {"__name__": "docs_python"}
    printed = []
    for block in _BLOCK.finditer(text):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block["code"], str(PAGE), "exec"), namespace)
        printed.append((block, out.getvalue()))
    return printed


@pytest.mark.slow  # converts a timm ResNet-18 and a 4-layer BERT
def test_every_block_of_the_python_page_prints_what_it_shows():
    pytest.importorskip("pandas")
    text = PAGE.read_text(encoding="utf-8")
    printed = run_page(text)
    assert len(printed) == 7
    for block, out in printed:
        if block["out"] is not None:
            assert out == block["out"], f"docs/python.md, the block:\n{block['code']}"


def _write() -> None:
    text = PAGE.read_text(encoding="utf-8")
    pieces, end = [], 0
    for block, out in run_page(text):
        if block["out"] is None:
            continue
        start = block.start("out")
        pieces += [text[end:start], out]
        end = block.end("out")
    PAGE.write_text("".join(pieces) + text[end:], encoding="utf-8")


if __name__ == "__main__" and "--write" in sys.argv:
    sys.path.insert(0, str(PAGE.parent.parent))  # this tree's onnxflops, not an installed one
    _write()
