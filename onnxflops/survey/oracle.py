"""What a framework itself says a model costs: the independent check every survey row is held to.

torch: FlopCounterMode's total / 2 as MACs, with attention on the math backend (FlopCounterMode has
no formula for the CPU flash-attention kernel) and transformers' experts run eagerly (its grouped
kernel is one op the counter does not see into); params are `parameters()`. Where the counter has
no formula for a kernel the model runs (the oneDNN LSTM), the work it missed is derived by hand and
reported beside it, never silently added. Nothing here touches
onnxflops' own pipeline. torch is imported only when a torch model is checked.
"""

from __future__ import annotations

import contextlib
import math


def flop_counter_flops(module, args: tuple = (), kwargs: dict | None = None) -> int:
    """What torch.utils.flop_counter.FlopCounterMode counts for one forward pass.

    Grad is enabled so torch's fused inference fast paths do not hide matmuls; meta tensors are
    counted as real ones are (the counter reads shapes only).
    """
    return checked_flop_counter(module, args, kwargs)[0]


def checked_flop_counter(module, args: tuple = (), kwargs: dict | None = None
                         ) -> tuple[int, dict[str, int]]:
    """FlopCounterMode's FLOPs of one forward pass, and the MACs it missed by kind of module.

    The counter has no formula for some kernels: the oneDNN LSTM that nn.LSTM runs on the CPU
    counts 0. Each recurrent module's work is derived by hand (recurrent_macs) and held against
    what the counter saw while it ran; the shortfall is what the counter missed.
    """
    from torch.utils.flop_counter import FlopCounterMode

    missed: dict[str, int] = {}
    with _as_the_oracle_runs(module), FlopCounterMode(display=False) as counter, \
            _recurrent_checked(module, counter, missed), _distances_checked(counter, missed):
        module(*args, **(kwargs or {}))
    return counter.get_total_flops(), missed


@contextlib.contextmanager
def _as_the_oracle_runs(module):
    """Grad on, attention on the math backend, experts eager, the export's code paths: how every
    oracle pass runs `module`."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH), eager_experts(module), \
            export_code_paths(module):
        yield


@contextlib.contextmanager
def inference_counted(module):
    """No grad, and every parameter of `module` with requires_grad off for the duration.

    FlopCounterMode's module tracker hooks the gradient of each module argument that requires
    grad; a view of a parameter made under no_grad requires grad yet has no gradient function,
    so a module called with one (a library's kernel layer given `conv.weight.squeeze(1)`, as
    transformers' hub-kernel layers are) fails the count ("Expected gradient function to be
    set"). With no parameter requiring grad no tensor does, and nothing is hooked.
    """
    import torch

    params = [p for p in module.parameters() if p.requires_grad]
    try:
        for p in params:
            p.requires_grad_(False)
        with torch.no_grad():
            yield
    finally:
        for p in params:
            p.requires_grad_(True)


def discarded_modules(model, call) -> tuple[str, ...]:
    """The modules whose output `call()`'s result never reads, by name: those whose every param
    gets no gradient from the float tensors it returns (a vision tower's pooling head whose
    output its VLM overwrites, BigBird's pooler that its causal LM runs and discards), the
    outermost of them; none where that backward pass fails. The exported graph drops their
    work, as every compiled runtime does; FlopCounterMode counts it."""
    import torch

    params = dict(model.named_parameters())
    try:
        with torch.enable_grad():
            returned = [t for t in _tensors_in(call()) if t.is_floating_point() and t.requires_grad]
            if not returned:
                return ()
            grads = torch.autograd.grad(sum(t.float().sum() for t in returned),
                                        list(params.values()), allow_unused=True)
    except Exception:  # noqa: BLE001 - a model whose backward fails: nothing found
        return ()
    unused = {name for name, grad in zip(params, grads) if grad is None}
    found: list[str] = []
    for name, module in model.named_modules():
        own = [f"{name}.{p}" if name else p for p, _ in module.named_parameters()]
        if name and own and all(p in unused for p in own) \
                and not any(name.startswith(outer + ".") for outer in found):
            found.append(name)
    return tuple(found)


def discarded_work(module, args: tuple = (), kwargs: dict | None = None) -> dict[str, int]:
    """The MACs FlopCounterMode counts, as the oracle runs `module`, in work whose result no
    tensor of the forward's result depends on, by the module it ran in (_Dataflow: followed
    through every aten op, integer indices included); {} where there is none. Work inside a
    module whose other work is read counts too (LiLT's last layout attention product)."""
    from torch.utils.flop_counter import FlopCounterMode

    module.eval()
    products: list[tuple[str, int]] = []
    with _as_the_oracle_runs(module), FlopCounterMode(display=False) as counter, \
            _products_watched(counter, products) as flow:
        output = module(*args, **(kwargs or {}))
    return _discarded_work(products, flow, output, type(module).__name__)


@contextlib.contextmanager
def _products_watched(counter, products: list):
    """Every torch function the forward calls, watched while `counter` counts: each call the
    counter saw work in is appended to `products` as (its innermost module, its MACs), and the
    values that depend on it are followed (_Dataflow), which _discarded_work reads: yields the
    _Dataflow."""
    from torch.overrides import TorchFunctionMode

    flow = _Dataflow()

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            before = counter.get_total_flops()
            result = func(*args, **(kwargs or {}))
            counted = (counter.get_total_flops() - before) // 2
            if counted:
                parents = counter.mod_tracker.parents
                products.append((max(parents, key=len) if parents else "", counted))
                flow.made(result, len(products) - 1)
            return result

    with Watch(), flow.following():
        yield flow


class _Dataflow:
    """Which watched products each tensor's value depends on, followed through every aten op
    the forward runs, by storage: a view shares its base's, and an op that writes into one
    (in place, or `out=`) adds what it read to what the storage held. Values that leave the
    tensors (`.item()` read into Python) are not followed."""

    def __init__(self):
        self.depends: dict = {}  # StorageWeakRef → frozenset of product indices

    def made(self, result, product: int) -> None:
        for key in self._storages(result):
            self.depends[key] = self.depends.get(key, frozenset()) | {product}

    def read_by(self, value) -> frozenset:
        """The products the tensors in `value` depend on."""
        return frozenset().union(*(self.depends.get(k, ()) for k in self._storages(value)))

    @contextlib.contextmanager
    def following(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        flow = self

        class Follow(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                result = func(*args, **(kwargs or {}))
                read = flow._storages((args, kwargs))
                depends = frozenset().union(*(flow.depends.get(k, ()) for k in read))
                for key in flow._storages(result):
                    # A storage it read (written into, in place or as `out=`) keeps what it held
                    # with it; a fresh one (perhaps at a freed one's address) holds only this.
                    if depends or key in read:
                        flow.depends[key] = depends | flow.depends.get(key, frozenset()) \
                            if key in read else depends
                    else:
                        flow.depends.pop(key, None)
                return result

        with Follow():
            yield

    @staticmethod
    def _storages(value) -> set:
        import torch
        from torch.multiprocessing.reductions import StorageWeakRef
        from torch.utils._pytree import tree_leaves

        keys = set()
        for leaf in tree_leaves(value):
            if isinstance(leaf, torch.Tensor):
                try:
                    keys.add(StorageWeakRef(leaf.untyped_storage()))
                except (RuntimeError, NotImplementedError, TypeError):  # one without storage
                    pass
        return keys


def _discarded_work(products: list, flow: _Dataflow, output, root: str) -> dict[str, int]:
    """MACs by module (its path below `root`) of the watched products that no tensor of `output`
    depends on (_Dataflow): work the forward runs and drops."""
    read = flow.read_by(_tensors_in(output))
    discarded: dict[str, int] = {}
    for index, (where, macs) in enumerate(products):
        if index not in read:
            name = where[len(root) + 1:] if where.startswith(root + ".") else where
            discarded[name] = discarded.get(name, 0) + macs
    return discarded


def _tensors_in(value, depth: int = 0, seen: set | None = None) -> list:
    """The tensors in a forward's result: in tuples, lists, dicts (transformers' outputs) and the
    attributes of other objects (its caches), nested."""
    import torch

    seen = set() if seen is None else seen
    if isinstance(value, torch.Tensor):
        return [value]
    if depth > 6 or id(value) in seen or isinstance(value, (str, bytes, torch.nn.Module)):
        return []
    seen.add(id(value))
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = list(getattr(value, "__dict__", {}).values())
    return [t for item in items for t in _tensors_in(item, depth + 1, seen)]


def torch_oracle(module, args: tuple = (), kwargs: dict | None = None,
                 unread: tuple[str, ...] = ()) -> tuple[int, int]:
    """(MACs, params) of a torch module in eval mode, as torch counts them.

    `unread`: parts of parameter names the forward pass never reads, left out of params.
    """
    return checked_torch_oracle(module, args, kwargs, unread)[:2]


def checked_torch_oracle(module, args: tuple = (), kwargs: dict | None = None,
                         unread: tuple[str, ...] = ()) -> tuple[int, int, dict[str, int]]:
    """torch_oracle's (MACs, params), and the MACs FlopCounterMode missed by kind of module
    (checked_flop_counter)."""
    module.eval()
    flops, missed = checked_flop_counter(module, args, kwargs)
    return flops // 2, sum(p.numel() for name, p in module.named_parameters()
                           if not any(part in name for part in unread)), missed


# Gate matmuls per step of each recurrent kind: LSTM's i, f, g, o; GRU's r, z, n; RNN's one.
RECURRENT_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_macs(kind: str, input_size: int, hidden_size: int, layers: int, directions: int,
                   steps: int, proj_size: int = 0) -> int:
    """Σ_layers directions·steps·(g·H·(I_l + P) + P·H): each step's g gate matmuls of the input
    and the previous output (P = proj_size or H wide), and LSTM's projection H → P; I_l = I for
    the first layer, directions·P after it (steps: time steps × batch)."""
    gates, out = RECURRENT_GATES[kind], proj_size or hidden_size
    projection = proj_size * hidden_size if proj_size else 0
    total, width = 0, input_size
    for _ in range(layers):
        total += directions * steps * (gates * hidden_size * (width + out) + projection)
        width = directions * out
    return total


@contextlib.contextmanager
def _recurrent_checked(module, counter, missed: dict[str, int]):
    """Hooks on every nn.LSTM, nn.GRU and nn.RNN of `module` adding to `missed` the MACs of
    their hand formula that `counter` did not count while they ran."""
    import torch

    kinds = {torch.nn.LSTM: "LSTM", torch.nn.GRU: "GRU", torch.nn.RNN: "RNN"}
    handles, seen = [], {}
    for sub in module.modules():
        kind = kinds.get(type(sub))
        if kind is None:
            continue

        def before(m, inputs):
            seen[id(m)] = counter.get_total_flops()

        def after(m, inputs, output, kind=kind):
            x = inputs[0]
            if isinstance(x, torch.nn.utils.rnn.PackedSequence):
                steps = x.data.shape[0]  # every sequence's steps, packed
            else:
                steps = math.prod(x.shape[:-1])  # time × batch (either order), or time alone
            hand = recurrent_macs(kind, m.input_size, m.hidden_size, m.num_layers,
                                  2 if m.bidirectional else 1, steps,
                                  getattr(m, "proj_size", 0))
            counted = (counter.get_total_flops() - seen.pop(id(m))) // 2
            if hand > counted:
                missed[kind] = missed.get(kind, 0) + hand - counted

        handles += [sub.register_forward_pre_hook(before), sub.register_forward_hook(after)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# ATen's cdist takes its matrix-product form for p = 2 where compute_mode asks for it, or, by
# default, where either set holds more than 25 points (`_euclidean_dist`); else a direct kernel.
_CDIST_MM_ALWAYS, _CDIST_MM_IF_NECESSARY = "use_mm_for_euclid_dist", \
    "use_mm_for_euclid_dist_if_necessary"


def cdist_macs(x1_shape, x2_shape, p: float = 2.0, compute_mode: str | None = None) -> int:
    """B·P·R·(M + 2) where ATen's cdist runs as a matrix product (p = 2, more than 25 points or
    compute_mode use_mm_for_euclid_dist): [−2·x1, ‖x1‖², 1] times [x2, 1, ‖x2‖²]ᵀ, M + 2 wide;
    0 for its direct kernel, which multiplies no matrices. B the broadcast batch, P and R the
    points of x1 and x2, M their width."""
    points, others, width = x1_shape[-2], x2_shape[-2], x1_shape[-1]
    uses_mm = p == 2 and (compute_mode == _CDIST_MM_ALWAYS or
                          compute_mode in (None, _CDIST_MM_IF_NECESSARY) and
                          (points > 25 or others > 25))
    if not uses_mm:
        return 0
    import numpy as np

    batch = math.prod(np.broadcast_shapes(tuple(x1_shape[:-2]), tuple(x2_shape[:-2])))
    return batch * points * others * (width + 2)


@contextlib.contextmanager
def _distances_checked(counter, missed: dict[str, int]):
    """Each torch.cdist the forward calls adds to `missed` the MACs of its hand formula
    (cdist_macs) that `counter` did not count while it ran: FlopCounterMode has no formula for
    `_cdist_forward` and counts 0 (Mimi's codebook search)."""
    import torch
    from torch.overrides import TorchFunctionMode

    class Distances(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is not torch.cdist:
                return func(*args, **kwargs)
            before = counter.get_total_flops()
            result = func(*args, **kwargs)
            x1, x2 = args[0], args[1] if len(args) > 1 else kwargs["x2"]
            p = args[2] if len(args) > 2 else kwargs.get("p", 2.0)
            mode = args[3] if len(args) > 3 else kwargs.get("compute_mode")
            hand = cdist_macs(tuple(x1.shape), tuple(x2.shape), p, mode)
            counted = (counter.get_total_flops() - before) // 2
            if hand > counted:
                missed["cdist"] = missed.get("cdist", 0) + hand - counted
            return result

    with Distances():
        yield


def keras_params(model, unread: tuple[str, ...] = ()) -> int:
    """A Keras model's trainable weights: its non-trainable ones are what torch calls buffers."""
    return sum(math.prod(w.shape) for w in model.trainable_weights
               if not any(part in w.path for part in unread))


@contextlib.contextmanager
def eager_experts(module):
    """transformers' mixture-of-experts layers run as plain per-expert matmuls for the duration:
    in every model the module holds, each with its own config (a speech model's language model
    from another family: NeMo SpeechLM's Nemotron-H ran its grouped kernel, which
    FlopCounterMode counts as 0, under an outer config that said eager)."""
    switched = []
    for part in module.modules():
        setter = getattr(part, "set_experts_implementation", None)
        previous = getattr(getattr(part, "config", None), "_experts_implementation", None)
        if setter is None or previous in (None, "eager"):
            continue
        try:
            setter("eager")
        except (ValueError, AttributeError, KeyError):  # a model without experts
            continue
        switched.append((setter, previous))
    try:
        yield
    finally:
        for setter, previous in reversed(switched):
            setter(previous)


@contextlib.contextmanager
def export_code_paths(model):
    """The model's own code on the path it takes when exported, for the duration: the
    `is_torchdynamo_exporting` of the modeling module of each of its modules' classes made true
    (a VLM's language model is another family's, in its own module: MiniCPM-V 4.6's is Qwen3.5's
    text model). A chunked linear attention (Qwen3.5's gated delta rule) solves its triangular
    system with torch.linalg.solve_triangular when run, which FlopCounterMode does not count,
    and by forward substitution and two products when exported: the oracle counts the program
    the graphs hold. Yields whether any module has that switch."""
    import sys

    switches = {}
    for part in model.modules():
        code = sys.modules.get(type(part).__module__)
        switch = getattr(code, "is_torchdynamo_exporting", None)
        if switch is not None and code not in switches:
            switches[code] = switch
    for code in switches:
        code.is_torchdynamo_exporting = lambda: True
    try:
        yield bool(switches)
    finally:
        for code, switch in switches.items():
            code.is_torchdynamo_exporting = switch
