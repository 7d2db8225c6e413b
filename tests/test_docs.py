"""Every code block of the documentation runs, and prints what the page shows (the rules are in
tests/helpers/docs.py); the site builds with `mkdocs build --strict`; the notebook runs.

    python tests/test_docs.py --write docs/PAGE.md   # fill a page's output blocks in
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# The pages show the whole install at work; the core venvs (no onnxruntime) leave them out.
pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).parent))  # helpers, when run as a script
from helpers import docs  # noqa: E402

PAGES = docs.pages()
SLOW_PAGES = [p for p in PAGES if docs.has_slow_blocks(p)]


def _id(page: Path) -> str:
    return str(page.relative_to(docs.ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_the_fast_blocks_of_a_page_print_what_it_shows(page, tmp_path, monkeypatch):
    # The pages show the whole install at work (`profile` among them); the core venvs lack it.
    pytest.importorskip("onnxruntime")
    monkeypatch.chdir(tmp_path)
    assert docs.run_page(page, slow=False) == []


@pytest.mark.slow  # converts framework models
@pytest.mark.parametrize("page", SLOW_PAGES, ids=_id)
def test_every_block_of_a_page_prints_what_it_shows(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert docs.run_page(page, slow=True) == []


def test_the_block_rules_read_what_a_page_writes():
    text = ('<!-- docs: slow -->\n```python\nprint(1)\n```\n\n```text\n1\n```\n\n'
            '<!-- docs: not run: installs -->\n```bash\npip install x\n```\n\n'
            '```console\n$ onnxflops --version; echo $?\nonnxflops 0\n0\n```\n')
    found = docs.blocks(text)
    assert [(b.lang, b.slow, b.not_run) for b in found] == [
        ("python", True, None), ("bash", False, "installs"), ("console", False, None)]
    assert found[0].output.body == "1\n"
    assert docs.console(found[2].body) == [("onnxflops --version; echo $?", "onnxflops 0\n0\n")]
    assert docs.commands("onnxflops count a.onnx \\\n  --input x=1x3  # a comment\n# only\n") \
        == ["onnxflops count a.onnx --input x=1x3"]


def test_a_page_that_shows_a_wrong_output_is_caught(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(2 + 2)\n```\n\n```text\n5\n```\n\n"
                    "```console\n$ onnxflops count missing.onnx; echo $?\nnothing\n```\n")
    monkeypatch.chdir(tmp_path)
    problems = docs.run_page(page, slow=False)
    assert len(problems) == 2 and "prints:\n4\n" in problems[0]
    assert "missing.onnx" in problems[1] and problems[1].endswith("2\n")


@pytest.mark.slow  # starts a Jupyter kernel
def test_the_notebook_prints_what_it_stores(tmp_path):
    pytest.importorskip("nbclient")
    pytest.importorskip("pandas")
    differing, _ = docs.run_notebook(docs.DOCS / "notebook.ipynb", tmp_path)
    assert differing == []


@pytest.mark.slow  # about 30 s: renders every page and the API reference
def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=docs.ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-5000:]
    assert (tmp_path / "site" / "reference" / "cost-table" / "index.html").exists()


def _write_notebook(path: Path) -> None:
    """Store in the notebook what it prints now (run by `--write docs/notebook.ipynb`)."""
    import tempfile

    import nbformat

    with tempfile.TemporaryDirectory() as folder:
        _, fresh = docs.run_notebook(path, Path(folder))
    nbformat.write(fresh, path)


if __name__ == "__main__" and "--write" in sys.argv:
    import os
    import tempfile

    sys.path.insert(0, str(docs.ROOT))  # this tree's onnxflops, not an installed one
    for page in [Path(name).resolve() for name in sys.argv[sys.argv.index("--write") + 1:]]:
        if page.suffix == ".ipynb":
            _write_notebook(page)
            continue
        with tempfile.TemporaryDirectory() as folder:
            os.chdir(folder)
            for problem in docs.run_page(page, slow=True, write=True):
                print(problem, "\n")
