"""The documentation's code blocks, run: every page of docs/ is a script the test suite runs.

A page's fenced blocks run in order, in a temporary folder of its own, python blocks in one
namespace:
- ```python: executed; a ```text block right after it is what it prints, compared exactly.
- ```console: `$ COMMAND` lines, each followed by the output it prints (stdout, then stderr),
  compared exactly; `$ COMMAND; echo $?` also prints the exit status.
- ```bash: each command run, and it must exit 0 (`onnxflops count` may exit 1: some nodes
  uncosted). `onnxflops ...` runs in this process (onnxflops.cli.main); `python bench/...`,
  `python tools/...` and `python -m ...` in a child process, the repository's paths made whole.
- ```text after another block is its output; any other language is not code and is not run.

A comment line `<!-- docs: slow -->` before a block marks it slow (it converts a framework model,
or runs one under onnxruntime): it runs only in the slow layer, and a block that needs what a slow
block made is marked slow too. `<!-- docs: not run: REASON -->` leaves one block out (an install line, a whole test run);
the reason is printed with the page's results. `python tests/test_docs.py --write PAGE` fills in
every output block from what the code prints now.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
_MARK = re.compile(r"<!-- docs: (?P<what>slow|not run: [^>]*?) -->\s*$")
# Commands a page shows that must not run in a test: installs and whole test runs.
NOT_RUN_PREFIXES = ("pip ", "python -m pip", "python -m pytest", "lint-imports")


@dataclass
class Block:
    lang: str
    body: str
    start: int  # offsets of the body in the page, for --write
    end: int
    slow: bool = False
    not_run: str | None = None
    output: "Block | None" = None  # the text block showing what it prints


def blocks(text: str) -> list[Block]:
    """The page's code blocks, each with its marks and the output block that follows it."""
    found: list[Block] = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        block = Block(match["lang"], match["body"], match.start("body"), match.end("body"),
                      slow=bool(mark and mark["what"] == "slow"),
                      not_run=mark["what"][len("not run: "):] if mark and mark["what"] != "slow"
                      else None)
        between = text[found[-1].end:match.start()] if found else ""
        if (block.lang == "text" and found and found[-1].output is None
                and found[-1].lang == "python" and between.strip("`\n ") == ""):
            found[-1].output = block
            continue
        found.append(block)
    return found


def commands(body: str) -> list[str]:
    """A bash block's commands: comments dropped, backslash continuations joined."""
    words = (shlex.split(line, comments=True) for line in body.replace("\\\n", " ").splitlines())
    return [shlex.join(w) for w in words if w]


def console(body: str) -> list[tuple[str, str]]:
    """A console block's (command, expected output) pairs."""
    pairs: list[tuple[str, list[str]]] = []
    for line in body.splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].rstrip("\n"), []))
        elif pairs:
            pairs[-1][1].append(line)
    return [(cmd, "".join(out)) for cmd, out in pairs]


def run_command(command: str) -> tuple[int, str]:
    """Run one shell line of a page in the current folder: (exit status, stdout + stderr)."""
    status_asked = command.endswith("; echo $?")
    command = command.removesuffix("; echo $?")
    argv, folder = _expanded(shlex.split(command))
    redirect = None
    if ">" in argv:
        argv, redirect = argv[:argv.index(">")], argv[argv.index(">") + 1]
    if argv[0] == "onnxflops":
        from onnxflops import cli

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(), contextlib.chdir(folder):
            try:
                code = cli.main(argv[1:])
            except SystemExit as e:  # argparse's own exit: an option error, --help, --version
                code = e.code
        stdout, stderr = out.getvalue(), err.getvalue()
    elif argv[:3] == ["python", "bench/models.py", "."]:
        code, stdout, stderr = _bench_models(argv[3:]), "", ""
    elif argv[0] == "python":
        argv = [sys.executable] + [str(ROOT / a) if (ROOT / a).exists() and "/" in a else a
                                   for a in argv[1:]]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        raise AssertionError(f"a page runs onnxflops and python commands only, not: {command}")
    if redirect:
        Path(redirect).write_text(stdout)
        stdout = ""
    return code, stdout + stderr + (f"{code}\n" if status_asked else "")


_BENCH_MODELS: dict[str, Path] = {}


def _bench_models(names: list[str]) -> int:
    """`python bench/models.py . NAMES`, which many pages run first: each model is written once
    per test process and copied into the page's folder (ResNet-50's weights are 100 MB)."""
    import tempfile

    for name in names:
        if name not in _BENCH_MODELS:
            folder = Path(tempfile.mkdtemp(prefix="docs-bench-"))
            done = subprocess.run([sys.executable, str(ROOT / "bench" / "models.py"), str(folder),
                                   name], capture_output=True, text=True)
            if done.returncode:
                return done.returncode
            _BENCH_MODELS[name] = folder
        for made in _BENCH_MODELS[name].iterdir():
            # A copy: onnx refuses external data reached through a link (a "hardlink attack").
            if not Path(made.name).exists():
                shutil.copy(made, made.name)
    return 0


def _expanded(argv: list[str]) -> tuple[list[str], Path]:
    """A command's patterns (`survey/*.csv`) expanded as a shell would, and the folder it runs
    in: the current one, or the repository's root where the patterns name the repository's
    files (the page then shows the command as run from a checkout)."""
    patterns = [a for a in argv if any(c in a for c in "*?[")]
    folder = Path.cwd()
    if patterns and not any(folder.glob(patterns[0])) and any(ROOT.glob(patterns[0])):
        folder = ROOT
    expanded = []
    for arg in argv:
        matches = sorted(str(p.relative_to(folder)) for p in folder.glob(arg)) \
            if arg in patterns else []
        expanded += matches or [arg]
    return expanded, folder


def run_page(page: Path, slow: bool, write: bool = False) -> list[str]:
    """Run a page's blocks (the slow ones too when `slow`) in the current folder; a list of what
    differs from the page (empty: the page is right). With `write`, the page's output blocks are
    rewritten to what the code prints."""
    text = page.read_text(encoding="utf-8")
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    problems, edits = [], []
    for block in blocks(text):
        if block.not_run is not None or (block.slow and not slow):
            continue
        where = f"{page.name}, the {block.lang} block:\n{block.body}"
        if block.lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                # Blank lines before the code: a traceback gives the line of the page.
                code = "\n" * text.count("\n", 0, block.start) + block.body
                exec(compile(code, str(page), "exec"), namespace)
            if block.output is not None:
                edits.append((block.output, out.getvalue()))
                if out.getvalue() != block.output.body:
                    problems.append(f"{where}\nprints:\n{out.getvalue()}")
        elif block.lang == "bash":
            for command in commands(block.body):
                assert not command.startswith(NOT_RUN_PREFIXES), \
                    f"{page.name}: mark the block holding `{command}` <!-- docs: not run: ... -->"
                code, output = run_command(command)
                allowed = (0, 1) if command.startswith("onnxflops count") else (0,)
                if code not in allowed:
                    problems.append(f"{where}\n`{command}` exited {code}:\n{output[-3000:]}")
        elif block.lang == "console":
            lines = []
            for command, expected in console(block.body):
                _, output = run_command(command)
                lines.append(f"$ {command}\n{output}")
                if output != expected:
                    problems.append(f"{where}\n`{command}` prints:\n{output}")
            edits.append((block, "".join(lines)))
    if write:
        for block, new in sorted(edits, key=lambda e: -e[0].start):
            text = text[:block.start] + new + text[block.end:]
        page.write_text(text, encoding="utf-8")
    return problems


def pages() -> list[Path]:
    """Every page of the site, and the README, whose examples are the first a user runs."""
    return sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def has_slow_blocks(page: Path) -> bool:
    return any(b.slow for b in blocks(page.read_text(encoding="utf-8")))


def run_notebook(path: Path, folder: Path):
    """The notebook executed in a fresh kernel in `folder`, and the outputs its cells stored
    against those they print now: [(cell source, stored, printed)] for every cell that differs.
    Outputs are compared as text (streams, and each result's text/plain)."""
    import nbformat
    from nbclient import NotebookClient

    stored = nbformat.read(path, as_version=4)
    fresh = nbformat.read(path, as_version=4)
    NotebookClient(fresh, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return [(old.source, _text(old), _text(new)) for old, new in zip(stored.cells, fresh.cells)
            if old.cell_type == "code" and _text(old) != _text(new)], fresh


def _text(cell) -> list[str]:
    return [o.get("text") or o.get("data", {}).get("text/plain", "") for o in cell.outputs
            if o.output_type in ("stream", "execute_result", "display_data")]
