"""constraints/cpu.txt, which the README's commands and CI install with, pins every package that
`pip install -e ".[all]"` asks for, at versions inside the ranges pyproject.toml declares, and the
torch/torchvision pair that tools/lock.py resolves it under (tools/lock.py regenerates it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The core tests run on Python 3.10 (no tomllib) with the core dependencies only (no packaging).
tomllib = pytest.importorskip("tomllib")
Requirement = pytest.importorskip("packaging.requirements").Requirement

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import lock  # noqa: E402


def requirements_of_all() -> list[Requirement]:
    """The core dependencies and those of every extra `all` reaches, extras followed through."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    found, todo, seen = [Requirement(r) for r in project["dependencies"]], ["all"], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for line in extras[extra]:
            requirement = Requirement(line)
            if requirement.name == "onnxflops":
                todo.extend(requirement.extras)
            else:
                found.append(requirement)
    return found


def test_every_requirement_of_all_is_pinned_inside_its_range():
    pins = lock.locked()
    requirements = requirements_of_all()
    assert len(requirements) > 20
    for requirement in requirements:
        name = lock._normalized(requirement.name)
        assert name in pins, f"{requirement.name} is not pinned in constraints/cpu.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), \
            f"{name}=={pins[name]} is outside {requirement}"


def test_the_lock_holds_the_torch_pair_it_was_resolved_under():
    pair = {}
    for line in lock.PAIR.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pair[name] = version
    assert pair == {"torch": "2.14.1", "torchvision": "0.29.1"}
    assert {name: lock.locked()[name] for name in pair} == pair
