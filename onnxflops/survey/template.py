"""The process every survey row of a torch registry forks from: importing this module imports what
those rows all import (torch, torchvision, the exporter, onnxflops' pipeline) and builds the
exporter's registry of translations and the one trace's decomposition tables for it, once for the
whole survey instead of once per row.

Only multiprocessing's forkserver imports it (`set_forkserver_preload`); each row still runs in a
process of its own, forked from that server, under its own caps. torchvision comes too, since timm
imports it. Nothing here runs a model or starts a thread: a fork after torch has started its
thread pool could hang.
"""

from __future__ import annotations

import contextlib

with contextlib.suppress(ImportError):  # a survey of ONNX files alone needs none of it
    import torch  # noqa: F401 - imported for the rows that fork from here

    with contextlib.suppress(ImportError):
        import torchvision  # noqa: F401

    from onnxflops.converters.from_torch import warm_torchlib_registry

    # Anything raised here would end the server and every row with it; the rows build their own.
    with contextlib.suppress(Exception):
        warm_torchlib_registry()

import onnxflops.api  # noqa: E402,F401 - the pipeline every row counts with
import onnxflops.survey.measure  # noqa: E402,F401
