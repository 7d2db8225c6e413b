"""The layout page (docs/how-it-works.md) names every folder and top-level module of the package, and
nothing that is gone."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "onnxflops"


def _layout() -> str:
    return (ROOT / "docs" / "how-it-works.md").read_text()


def test_every_folder_and_top_level_module_is_named():
    text = _layout()
    parts = [p.name + "/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    parts += [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert [p for p in sorted(parts) if f"`{p}" not in text and f"{p}`" not in text] == []


def test_nothing_named_is_gone():
    names = set(re.findall(r"`(?:onnxflops/)?([\w/]+(?:\.py|/))`", _layout()))
    # converters/ and models/ are links to the repository's own folders: walked there.
    found = [(top, p) for top in (PACKAGE, ROOT / "converters", ROOT / "models")
             for p in top.rglob("*") if "__pycache__" not in p.parts]
    files = {str(p.relative_to(top if top == PACKAGE else ROOT)) + ("/" if p.is_dir() else "")
             for top, p in found}
    files |= {p.name + ("/" if p.is_dir() else "") for _, p in found}
    assert sorted(n for n in names if n not in files and n.rstrip("/") != "onnxflops") == []
