"""Fixtures every test file may use, and the split between the fast layer and framework tests.

Tests that convert with a framework (torch.onnx.export, tf2onnx) are marked `slow`: those under
tests/frameworks/ all are (its conftest marks them), the few elsewhere carry the marker.
`pytest -m "not slow"` is the inner loop: it does not even import tests/frameworks/, and a test
it runs that imports a framework fails, telling to mark it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

from helpers import run_capped

FRAMEWORK_TESTS = Path(__file__).parent / "frameworks"
FRAMEWORKS = ("torch", "tensorflow", "keras", "tf2onnx")


def fast_only(config: pytest.Config) -> bool:
    return "".join(config.getoption("markexpr", "").split()) == "notslow"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if fast_only(config) and (collection_path == FRAMEWORK_TESTS
                              or FRAMEWORK_TESTS in collection_path.parents):
        return True
    return None


def loaded_frameworks() -> set[str]:
    # None: a test made the module look absent (monkeypatch.setitem(sys.modules, name, None)).
    return {name for name in FRAMEWORKS if sys.modules.get(name) is not None}


def pytest_configure(config: pytest.Config) -> None:
    """Framework tests import TensorFlow as they are collected, and later ones torchvision or
    timm, whose import loads torch._dynamo and with it triton (CUDA builds of torch ship it).
    Both bundle LLVM: triton loaded after TensorFlow crashes the process, the other way round is
    fine. So triton, where installed, is loaded first, whatever order the tests run in."""
    if fast_only(config) or "tensorflow" in sys.modules:
        return
    import importlib.util

    if importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401


def pytest_collection_finish(session: pytest.Session) -> None:
    if fast_only(session.config) and loaded_frameworks():
        raise pytest.UsageError(f"collecting the fast layer imported {sorted(loaded_frameworks())}:"
                                " import frameworks inside the tests that need them, marked slow")


FRAMEWORKS_BEFORE = pytest.StashKey[set]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[FRAMEWORKS_BEFORE] = loaded_frameworks()


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A test not marked slow that imports a framework fails (seen where it is first imported)."""
    new = loaded_frameworks() - item.stash.get(FRAMEWORKS_BEFORE, set())
    if new and not item.get_closest_marker("slow"):
        pytest.fail(f"{item.nodeid} imported {sorted(new)}: a test that converts with a "
                    "framework is marked @pytest.mark.slow")


@pytest.fixture
def onnx_file(tmp_path: Path):
    """Save a model in this test's tmp dir: `onnx_file(model, "name.onnx")` is its path as text."""
    def save(proto: onnx.ModelProto, name: str = "model.onnx") -> str:
        path = tmp_path / name
        onnx.save(proto, str(path))
        return str(path)
    return save


@pytest.fixture
def capped():
    """Run a child process (a framework conversion) held to a memory cap: helpers.run_capped."""
    return run_capped
