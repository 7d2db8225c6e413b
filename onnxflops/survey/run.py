"""Each survey row in a process of its own, under a memory and a time cap, so that no model can
end the survey; rows run on a local pool of such processes, or as Ray tasks on a cluster.

The pool is concurrent.futures' (threads, each waiting on its row's process); Ray schedules its
own tasks. A row of a torch registry forks from a template process that has imported torch and the
exporter once (`onnxflops.survey.template`, multiprocessing's forkserver): each row is still a
process of its own, under its own caps, without paying those imports again. Other rows (factories,
ONNX files) start with `spawn` and import only what they need.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable, Iterable

from onnxflops.errors import OnnxFlopsError
from onnxflops.survey.rows import blank_row, judge
from onnxflops.survey.sources import TORCH_REGISTRIES, Task

TEMPLATE = "onnxflops.survey.template"


@dataclass(frozen=True)
class Caps:
    memory_gb: float = 6.0  # the memory a row's process may take (RLIMIT_DATA: see _child)
    timeout: float = 600.0  # seconds a row's process may run
    threads: int = 1  # torch's intra-op threads in a row's process


def run_isolated(task: Task, caps: Caps) -> dict:
    """The row of `task`, made in a new process; a row saying why where the process failed."""
    context = _context_for(task)
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(task, caps, send), name=f"survey {task.label}")
    process.start()
    send.close()
    stage, row = "build", None
    deadline = time.monotonic() + caps.timeout
    try:
        while row is None:
            left = deadline - time.monotonic()
            if left <= 0 or not receive.poll(left):
                break
            try:
                kind, value = receive.recv()
            except EOFError:  # the process died
                break
            if kind == "stage":
                stage = value
            else:
                row = value
    finally:
        if row is None and process.is_alive():
            process.kill()
        process.join()
        receive.close()
    if row is None:
        if process.exitcode in (None, -9) and time.monotonic() >= deadline:
            why = f"timed out after {caps.timeout:g} s"
        elif process.exitcode == -9:
            why = f"killed (out of memory beyond {caps.memory_gb:g} GB?)"
        else:
            why = f"the process died (exit code {process.exitcode})"
        row = judge(blank_row(task.label), "", {stage: f"{why} in its {stage} stage"})
    return row


def _context_for(task: Task):
    """The forkserver, with torch imported once, for a torch registry's rows; spawn for the rest
    and where a platform lacks the forkserver."""
    # A Keras row spawns: triton imported after TensorFlow segfaults, and the template holds torch.
    if task.source not in TORCH_REGISTRIES \
            or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([TEMPLATE])  # read when the server starts, at the first row
    return context


def _child(task: Task, caps: Caps, send) -> None:
    """A row's process: caps set before anything large is imported, the row sent back.

    The memory cap is RLIMIT_DATA (the process's private writable memory: heap, tensors, arenas),
    not the address space: torch maps about 2.5 GB of CUDA libraries even on CPU, read-only
    code that takes no memory, and under an address-space cap a model of 1 GB failed at 4 GB."""
    import resource

    limit = int(caps.memory_gb * 1024 ** 3)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(caps.threads)
    if "torch" in sys.modules:  # forked from the template: its thread pool was sized before
        sys.modules["torch"].set_num_threads(caps.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    _quiet()
    from onnxflops.survey.measure import failure, measure, peak_mb

    if task.llm:
        from onnxflops.survey.llm import measure_llm as measure

    stage = ["build"]

    def told(name: str) -> None:
        stage[0] = name
        send.send(("stage", name))

    try:
        row = measure(task, caps.memory_gb, told)
    except BaseException as e:  # noqa: BLE001 - anything at all becomes the row's reason
        row = judge(blank_row(task.label), "", {stage[0]: failure(e)})
        row["peak_mb"] = peak_mb()
    send.send(("row", row))
    send.close()


def _quiet() -> None:
    """What models and exporters print goes nowhere: the survey's output is its rows."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)


def run_local(tasks: Iterable[Task], caps: Caps, jobs: int, finished: Callable[[dict], None]):
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_isolated, task, caps) for task in tasks]
        for future in as_completed(futures):
            finished(future.result())


def run_ray(tasks: Iterable[Task], caps: Caps, address: str, jobs: int,
            finished: Callable[[dict], None]):
    """The same rows as Ray tasks: `address` 'auto' starts a local Ray instance of `jobs` CPUs,
    any other is a cluster's address."""
    try:
        import ray
    except ImportError:
        raise OnnxFlopsError("--ray needs Ray: pip install 'onnxflops[cluster]'") from None
    local = address == "auto"
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    options = dict(num_cpus=max(1, jobs), include_dashboard=False) if local else {}
    ray.init(address=None if local else address, log_to_driver=False, ignore_reinit_error=True,
             runtime_env={"env_vars": {"PYTHONPATH": here}} if local else None, **options)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(run_isolated)
        pending = [remote.remote(task, caps) for task in tasks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            finished(ray.get(done[0]))
    finally:
        if local:
            ray.shutdown()
