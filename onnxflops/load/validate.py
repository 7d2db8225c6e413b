"""What a model must be before any stage reads it: opsets onnx knows, names that are text, element
types that exist, initializers whose dims are sizes and agree with the data they hold.

Each problem is one OnnxFlopsError line naming the tensor, node or opset at fault. The checks walk
the model's records once and allocate nothing in proportion to a number read from the file.
"""

from __future__ import annotations

import math

import onnx
import onnx.defs
from onnx import AttributeProto, TensorProto

from onnxflops.caches import memoized
from onnxflops.errors import OnnxFlopsError
from onnxflops.graph import NodeRow, domain_key, graphs_within
from onnxflops.load.schema import check_schema, checker_context, node_label
from onnxflops.ops import CHECKED_DOMAINS, DEFAULT_DOMAIN, HOLDS_SUBGRAPHS, ITERATES_A_BODY

_KNOWN_DTYPES = frozenset(v for k, v in TensorProto.DataType.items() if k != "UNDEFINED")
# Packed below a byte (two or four to a byte, and so in int32_data too): their data is not
# checked against dims here.
_SUB_BYTE = frozenset(getattr(TensorProto, n) for n in
                      ("UINT4", "INT4", "FLOAT4E2M1", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2")
                      if hasattr(TensorProto, n))
# Bits of each packed element type whose bytes onnxruntime checks against the dims: ceil(n·bits/8),
# in raw_data or one byte per int32_data entry (the 6-bit floats' packing it does not define).
_PACKED_BITS = {getattr(TensorProto, n): bits for n, bits in
                (("UINT4", 4), ("INT4", 4), ("FLOAT4E2M1", 4), ("UINT2", 2), ("INT2", 2))
                if hasattr(TensorProto, n)}
_COMPLEX = frozenset((TensorProto.COMPLEX64, TensorProto.COMPLEX128))
_TYPED_DATA = ("float_data", "int32_data", "string_data", "int64_data", "double_data",
               "uint64_data")


def check_model(model: onnx.ModelProto, where: str, *, names_text: bool = False) -> None:
    """Raise OnnxFlopsError naming the first thing in `model` no stage can make sense of.

    One pass over every node of every graph, nested ones and function bodies included: a
    50,000-node model is read here once, as the later stages read it once too. `names_text`:
    the reader found every node name to be text at C speed (text_names.py); otherwise they are
    read here, one by one."""
    _check_ir_version(model, where)
    _check_opsets(model, where)
    walk = _Walk(model, where, names_text)
    walk.graph(model.graph)
    # The functions the model calls first, those they call in turn: each body is walked once,
    # knowing whether onnxruntime inlines it (and so checks its nodes' schemas).
    functions = walk.functions
    done: set[tuple[str, str]] = set()
    while walk.calls:
        key = walk.calls.pop()
        if key not in done:
            done.add(key)
            walk.graph(onnx.GraphProto(node=functions[key].node), functions[key], called=True)
    for key, function in functions.items():
        if key not in done:
            walk.graph(onnx.GraphProto(node=function.node), function, called=False)
    if walk.unimported is not None:  # refused once every name is known to be text
        _refuse_domain(walk.unimported, "the model", where)


class _Walk:
    """The checks of each node of a graph, its nested graphs' included, and of the body of a
    local function, which onnxruntime checks as it does: every function's nodes of the domains
    it imports (in any function: "No opset registered for domain X in function F") and their
    input and output counts at its opsets (model.cc's ValidateFunctionNodeCounts); the nodes of
    the functions the model calls also against their ops' schemas, at the function's opsets
    and as run once inlined, at the model's ("Unrecognized attribute")."""

    def __init__(self, model: onnx.ModelProto, where: str, names_text: bool):
        self.model, self.where, self.names_text = model, where, names_text
        self.opsets = {domain_key(o.domain): o.version for o in model.opset_import}
        self.functions = {(f.domain, f.name): f for f in model.functions}
        self.calls: list[tuple[str, str]] = []  # local functions called, to walk as called
        self.unimported: onnx.NodeProto | None = None  # the graph's first of a domain not imported

    def graph(self, graph: onnx.GraphProto, function: onnx.FunctionProto | None = None,
              called: bool = True) -> None:
        """Check `graph` and its nested graphs: the model's (function None) or a function's
        body, `called` where the model calls it."""
        where, model = self.where, self.model
        if function is None:
            domains = set(self.opsets) | (set(DEFAULT_DOMAIN) if "" in self.opsets else set())
        else:
            label = f"{where}: function '{_text(function.name)}'"
            _check_imports(function.opset_import, label)
            imports = {domain_key(o.domain): o.version for o in function.opset_import}
            # As spelled: onnxruntime matches a function's nodes to its imports literally.
            domains = {o.domain for o in function.opset_import}
            context = checker_context(model, function.opset_import) if called else None
            running = running_opsets(self.opsets, imports)
        graphs = [graph]
        while graphs:
            graph = graphs.pop()
            _check_values(graph, where)
            if 1 <= model.ir_version < 4:
                _check_initializers_are_inputs(graph, model.ir_version, where)
            for node in graph.node:
                if not self.names_text:
                    _check_node(node, where)
                attributes = node.attribute
                if attributes:  # most nodes have none: the loop below is not even entered
                    for a in attributes:
                        kind = a.type
                        if kind in _TENSOR_ATTRIBUTES and self.names_text:
                            _check_tensors(a, node, where)
                        elif kind == AttributeProto.GRAPH:
                            _check_graph_named(a.g, a, node, where)
                            graphs.append(a.g)
                        elif kind == AttributeProto.GRAPHS:
                            for g in a.graphs:
                                _check_graph_named(g, a, node, where)
                            graphs.extend(a.graphs)
                if node.op_type in HOLDS_SUBGRAPHS and node.domain in DEFAULT_DOMAIN:
                    _check_control_flow(node, self.opsets, where)
                if called and (node.domain, node.op_type) in self.functions:
                    self._call(node)
                if function is None:
                    if node.domain not in domains and self.unimported is None:
                        self.unimported = node
                    continue
                if node.domain not in domains or called and node.domain == "ai.onnx":
                    _refuse_function_domain(node, domains, label)
                domain = domain_key(node.domain)
                if domain in CHECKED_DOMAINS:
                    try:
                        if context is None:
                            _check_counts(node, imports[domain])
                        else:
                            check_schema(NodeRow.of(node), context)
                            _check_runs_as_written(node, imports[domain], running[domain])
                    except OnnxFlopsError as e:
                        raise OnnxFlopsError(f"{label}: {e}") from None

    def _call(self, node: onnx.NodeProto) -> None:
        """A call of a local function: given no more inputs and outputs than its function has
        (onnxruntime's inliner: "Number of actual parameters cannot exceed number of formal
        parameters"); its function to walk as called."""
        function = self.functions[(node.domain, node.op_type)]
        for kind, given, formal in (("inputs", node.input, function.input),
                                    ("outputs", node.output, function.output)):
            if len(given) > len(formal):
                raise OnnxFlopsError(f"{self.where}: node {node_label(NodeRow.of(node))} calls "
                                     f"function '{_text(function.name)}' with {len(given)} "
                                     f"{kind}; it has {len(formal)}")
        self.calls.append((node.domain, node.op_type))


def _refuse_function_domain(node: onnx.NodeProto, domains: set[str], where: str) -> None:
    """A function's node of a domain the function imports no opset of under its node's spelling
    of it: onnxruntime 1.32 matches the two literally ("No opset registered for domain X in
    function F"), and, in a function the model calls, resolves no node of domain 'ai.onnx'
    spelled out ("No opset import for domain ai.onnx"), though it does in the model's graph."""
    if node.domain == "ai.onnx" and node.domain in domains:
        raise OnnxFlopsError(f"{where}: node {node_label(NodeRow.of(node))} is of domain "
                             "'ai.onnx' spelled out, which onnxruntime does not resolve in a "
                             "function (its ops are of domain '')")
    if node.domain == "" and "ai.onnx" in domains:
        raise OnnxFlopsError(f"{where}: node {node_label(NodeRow.of(node))} is of domain '' "
                             "(ai.onnx), which the function imports only as 'ai.onnx', a name "
                             "onnxruntime does not match to ''")
    _refuse_domain(node, "the function", where)


def running_opsets(model_opsets: dict[str, int], function_opsets: dict[str, int]) -> dict[str, int]:
    """The opset of each domain a local function imports that its nodes run at, by domain
    (domain_key): onnxruntime inlines them into the model's graph and runs them at the model's
    opset of the domain; where the model imports none, at the newest it knows (onnx's newest
    here), else at the function's. (A Softmax of a function importing opset 11 in a model
    importing 13 normalizes one axis, as Softmax-13 does.)"""
    newest = newest_opsets()
    return {d: model_opsets.get(d, newest.get(d, v)) for d, v in function_opsets.items()}


def _check_counts(node: onnx.NodeProto, opset: int) -> None:
    """As many inputs and outputs as the op takes at `opset` (onnxruntime checks them in every
    local function, called or not: "Invalid input count for op X in function F")."""
    schema = _schema_at(node.op_type, domain_key(node.domain), opset)
    if schema is None:
        return  # an op onnx does not know at this opset: onnxruntime finds none either
    for kind, given, low, high in (("inputs", node.input, schema.min_input, schema.max_input),
                                   ("outputs", node.output, schema.min_output,
                                    schema.max_output)):
        if not low <= len(given) <= high:
            takes = f"{low}" if low == high else f"{low} or more" if high >= 2**31 - 1 \
                else f"{low} to {high}"
            raise OnnxFlopsError(f"node {node_label(NodeRow.of(node))} has {len(given)} {kind}; "
                                 f"{node.op_type}-{schema.since_version} takes {takes}")


def _check_runs_as_written(node: onnx.NodeProto, written: int, running: int) -> None:
    """The op is the same at the function's opset as at the one onnxruntime runs it at (onnx's
    checker: "not compatible with the version imported by model"): a ReduceMax with an `axes`
    attribute in a function importing opset 17, run at the model's 20, is refused, and so is a
    Gelu (opset 20) run at 17 ("No Op registered for Gelu with domain_version of 17")."""
    if written == running:
        return
    domain = domain_key(node.domain)
    as_written = _schema_at(node.op_type, domain, written)
    as_run = _schema_at(node.op_type, domain, running)
    if as_written is not None and as_run is None:
        raise OnnxFlopsError(f"node {node_label(NodeRow.of(node))} is {node.op_type}-"
                             f"{as_written.since_version} at the function's opset {written}, but "
                             f"onnxruntime runs it at opset {running}, which has no "
                             f"{node.op_type}")
    if as_written is not None and as_run is not None \
            and as_written.since_version != as_run.since_version:
        raise OnnxFlopsError(f"node {node_label(NodeRow.of(node))} is {node.op_type}-"
                             f"{as_written.since_version} at the function's opset {written}, but "
                             f"onnxruntime runs it at opset {running}, as "
                             f"{node.op_type}-{as_run.since_version}")


@memoized(1024)
def _schema_at(op_type: str, domain: str, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, opset, domain)
    except onnx.defs.SchemaError:
        return None


@memoized(1)
def newest_opsets() -> dict[str, int]:
    """The newest opset of each domain whose schemas onnx holds."""
    newest: dict[str, int] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        newest[schema.domain] = max(newest.get(schema.domain, 0), schema.since_version)
    newest["ai.onnx"] = newest[""] = max(newest[""], onnx.defs.onnx_opset_version())
    return newest


def _check_ir_version(model: onnx.ModelProto, where: str) -> None:
    """A format newer than the installed onnx reads is refused, as onnx's checker refuses it and
    an onnxruntime of that age does ("Unsupported model IR version"); so is a model that names
    none (onnxruntime: "Missing model IR version"). An opset newer than onnx knows only warns."""
    if model.ir_version < 1:
        raise OnnxFlopsError(f"{where}: the model names no IR version (ir_version "
                             f"{model.ir_version}), which onnxruntime and onnx's checker require")
    if model.ir_version > onnx.IR_VERSION:
        raise OnnxFlopsError(f"{where}: IR version {model.ir_version} is newer than the "
                             f"{onnx.IR_VERSION} that onnx {onnx.__version__} reads; a newer onnx "
                             "may read it (pip install -U onnx)")


def _check_opsets(model: onnx.ModelProto, where: str) -> None:
    _check_imports(model.opset_import, where)
    if not any(o.domain in DEFAULT_DOMAIN for o in model.opset_import) and _uses_standard_ops(model):
        raise OnnxFlopsError(f"{where}: imports no opset of ai.onnx, yet its nodes use its ops")


def _check_imports(imports, where: str) -> None:
    """Each opset the model or a local function (`where` names it) imports: a domain that is
    text, a version from 1 (onnxruntime: "Invalid opset version for domain X in function F")
    that onnx's own functions can take (an int)."""
    for opset in imports:
        _check_name(opset.domain, "an opset's domain", where)
        domain = opset.domain or "ai.onnx"
        if not 1 <= opset.version < 2**31:
            raise OnnxFlopsError(f"{where}: imports opset {opset.version} of {domain}; "
                                 "opset versions start at 1" if opset.version < 1 else
                                 f"{where}: imports opset {opset.version} of {domain}, which no "
                                 "opset can be")


def opset_warnings(model: onnx.ModelProto) -> list[str]:
    """A warning for each opset newer than the installed onnx knows: its ops are costed with the
    newest schemas onnx has."""
    if all(map(_no_newer_than_onnx_knows, model.opset_import)):
        return []  # the common case, found without reading onnx's schemas
    newest = newest_opsets()
    return [f"imports opset {o.version} of {o.domain or 'ai.onnx'}, newer than the "
            f"{newest[o.domain]} onnx {onnx.__version__} knows: costed with opset "
            f"{newest[o.domain]}'s schemas" for o in model.opset_import
            if o.domain in newest and o.version > newest[o.domain]]


def _no_newer_than_onnx_knows(opset: onnx.OperatorSetIdProto) -> bool:
    """Surely no newer than the installed onnx knows: a standard opset up to onnx's own, or a
    domain onnx holds no schema of. (`newest_opsets` is the answer for the others.)"""
    if opset.domain in DEFAULT_DOMAIN:
        return opset.version <= onnx.defs.onnx_opset_version()
    return opset.domain not in onnx.defs.C.schema_version_map()


def _uses_standard_ops(model: onnx.ModelProto) -> bool:
    return any(n.domain in DEFAULT_DOMAIN for g in graphs_within(model.graph) for n in g.node)


def _check_graph_named(graph: onnx.GraphProto, attribute: onnx.AttributeProto,
                       node: onnx.NodeProto, where: str) -> None:
    """A nested graph (a Loop's body, an If's branch) has a name: onnxruntime refuses one that
    has none ("Field 'name' of 'graph' is required to be non-empty"); the main graph may not."""
    if not graph.name:
        raise OnnxFlopsError(f"{where}: node {node_label(NodeRow.of(node))}: its graph "
                             f"'{_text(attribute.name)}' has no name, which onnxruntime refuses")


def _refuse_domain(node: onnx.NodeProto, importer: str, where: str) -> None:
    """A node of a domain its graph's model (or function) imports no opset of: onnxruntime's "No
    opset import for domain X" (in a function: "No opset registered for domain X"), a call of a
    local function included."""
    raise OnnxFlopsError(f"{where}: node {node_label(NodeRow.of(node))} is of domain "
                         f"'{domain_key(node.domain) or 'ai.onnx'}', which {importer} imports "
                         "no opset of")


def _check_control_flow(node: onnx.NodeProto, opsets: dict[str, int], where: str) -> None:
    """Loop, If and Scan nodes hold their required attributes: onnx's shape inference of one
    without them may crash the process (onnx 1.19: Scan without num_scan_inputs)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opsets.get("", 1), "")
    except onnx.defs.SchemaError:
        return
    given = {a.name: a for a in node.attribute}
    for name, attribute in schema.attributes.items():
        if attribute.required and name not in given:
            raise OnnxFlopsError(f"{where}: node '{_text(node.name)}' ({node.op_type}) lacks "
                                 f"its required attribute '{name}'")
    scanned = given.get("num_scan_inputs")
    if node.op_type == "Scan" and scanned is not None \
            and not 0 < scanned.i <= len(node.input):  # onnx's inference loops over it
        raise OnnxFlopsError(f"{where}: node '{_text(node.name)}' (Scan) has num_scan_inputs "
                             f"{scanned.i}, but {len(node.input)} inputs")
    _check_body_arity(node, given, where, opsets.get("", 1))


def _check_body_arity(node: onnx.NodeProto, given: dict, where: str, opset: int) -> None:
    """A Loop's body takes its node's inputs (trip count, condition, carried values) and gives
    the condition then one value per output; a Scan's body takes and gives as many as its node;
    an If's branches give as many as it. onnx's inference judges a body that gives none as
    untyped, but onnxruntime refuses it ("'Loop' node has 1 outputs so the subgraph requires
    2 but has 0"). A Scan before opset 9 takes its sequence_lens first, which its body does not
    (left empty where absent)."""
    extra = 1 if node.op_type == "Loop" else 0
    unread = 1 if node.op_type == "Scan" and opset < 9 else 0
    for name in ("body",) if node.op_type in ITERATES_A_BODY else ("then_branch", "else_branch"):
        attribute = given.get(name)
        if attribute is None or attribute.type != AttributeProto.GRAPH:
            continue
        graph = attribute.g
        wanted = [("outputs", len(graph.output), len(node.output) + extra)]
        if name == "body":
            wanted.append(("inputs", len(graph.input), len(node.input) - unread))
        for kind, has, needs in wanted:
            if has != needs:
                raise OnnxFlopsError(
                    f"{where}: node '{_text(node.name)}' ({node.op_type}) of {len(node.input)} "
                    f"inputs and {len(node.output)} outputs: its {name} has {has} {kind}, "
                    f"not the {needs} it needs, which onnxruntime refuses")


def _check_values(graph: onnx.GraphProto, where: str) -> None:
    for kind, values in (("input", graph.input), ("output", graph.output),
                         ("value_info", graph.value_info)):
        for vi in values:
            _check_name(vi.name, f"a graph {kind}", where)
            if vi.type.HasField("tensor_type"):
                elem_type = vi.type.tensor_type.elem_type
                if not elem_type:  # a value with no type at all is fine: it has no tensor_type
                    raise OnnxFlopsError(f"{where}: tensor '{vi.name}' (a graph {kind}) is "
                                         "declared a tensor of no element type (0), which "
                                         "onnxruntime refuses")
                if elem_type not in _KNOWN_DTYPES:
                    raise OnnxFlopsError(f"{where}: tensor '{vi.name}' has element type "
                                         f"{elem_type}, which onnx does not define")
    for t in graph.initializer:
        _check_tensor(t, where)


def _check_initializers_are_inputs(graph: onnx.GraphProto, ir_version: int, where: str) -> None:
    """Before IR version 4 every initializer is also a graph input (onnx's checker: "in
    initializer but not in graph input"); onnxruntime refuses one that is not where only a
    nested graph reads it ("Graph ctor should have created NodeArg for initializer")."""
    inputs = {vi.name for vi in graph.input}
    for t in graph.initializer:
        if t.name not in inputs:
            raise OnnxFlopsError(f"{where}: initializer '{_text(t.name)}' is not a graph input, "
                                 f"as IR version {ir_version} (before 4) requires")


def _check_node(node: onnx.NodeProto, where: str) -> None:
    # Runs once per node of a model whose names may not all be text: the common case (all names
    # text, no tensor attribute) costs a scan of the names, and the label naming the node is built
    # only for an error.
    names = (node.name, node.op_type, node.domain, *node.input, *node.output)
    attributes = node.attribute
    if not node.metadata_props and bytes not in map(type, names) and (not attributes or not any(
            type(a.name) is bytes or a.type in _TENSOR_ATTRIBUTES for a in attributes)):
        return
    label = f"a {_text(node.op_type)} node"
    for text in names:
        _check_name(text, label, where)
    for prop in node.metadata_props:  # read for the node's layer
        _check_name(prop.key, f"metadata of {label}", where)
        _check_name(prop.value, f"metadata of {label}", where)
    for a in attributes:
        _check_name(a.name, f"an attribute of {label}", where)
        if a.type in _TENSOR_ATTRIBUTES:
            _check_tensors(a, node, where)


def _check_tensors(a: onnx.AttributeProto, node: onnx.NodeProto, where: str) -> None:
    """The tensor(s) of a TENSOR or TENSORS attribute."""
    what = f"attribute '{a.name}' of node '{_text(node.name)}'"
    for t in [a.t] if a.type == AttributeProto.TENSOR else a.tensors:
        _check_tensor(t, where, what)


_TENSOR_ATTRIBUTES = (AttributeProto.TENSOR, AttributeProto.TENSORS)


def _check_name(text: str | bytes, what: str, where: str) -> None:
    # protobuf gives back as bytes a string field that is not valid UTF-8.
    if isinstance(text, bytes):
        raise OnnxFlopsError(f"{where}: {what} has a name that is not UTF-8 text: {_text(text)}")


def _text(text: str | bytes) -> str:
    return text.decode("utf-8", "backslashreplace") if isinstance(text, bytes) else text


def _check_tensor(t: onnx.TensorProto, where: str, what: str | None = None) -> None:
    """`what`: the tensor in an error, an initializer named by its name where None. Runs once
    per initializer: the common case reads each field once and builds no label."""
    _check_name(t.name, "a tensor", where)
    dtype, dims = t.data_type, t.dims
    if dtype not in _KNOWN_DTYPES:
        what = what or f"initializer '{_text(t.name)}'"
        raise OnnxFlopsError(f"{where}: {what} has element type {dtype}, which onnx "
                             "does not define" if dtype else f"{where}: {what} has no "
                             "element type")
    if dims and min(dims) < 0:
        what = what or f"initializer '{_text(t.name)}'"
        raise OnnxFlopsError(f"{where}: {what} has negative dims {list(dims)}")
    if t.data_location == TensorProto.EXTERNAL:
        for entry in t.external_data:  # the file's path: onnxruntime cannot even say it is missing
            label = what or f"initializer '{_text(t.name)}'"
            _check_name(entry.key, f"the external data of {label}", where)
            _check_name(entry.value, f"the external data '{_text(entry.key)}' of {label}", where)
        return
    declared = math.prod(dims)
    if dtype in _SUB_BYTE:
        _check_packed(t, dtype, declared, where, what)
        return
    stored = _stored_elements(t, dtype)
    if stored != declared:
        what = what or f"initializer '{_text(t.name)}'"
        shape = "x".join(map(str, dims)) or "a scalar"
        raise OnnxFlopsError(f"{where}: {what} holds {stored:g} values, but its dims ({shape}) "
                             f"say {declared}")


def _check_packed(t: onnx.TensorProto, dtype: int, declared: int, where: str,
                  what: str | None) -> None:
    """A packed type's bytes, ceil(n·bits/8) for its dims' n elements, as onnxruntime checks
    them at load (an initializer of 1,000 uint4 values in one byte was counted, and `profile`
    failed reading it)."""
    bits = _PACKED_BITS.get(dtype)
    if bits is None:
        return
    stored = len(t.raw_data) or len(t.int32_data)
    needed = -(-declared * bits // 8)
    if stored != needed:
        what = what or f"initializer '{_text(t.name)}'"
        shape = "x".join(map(str, t.dims)) or "a scalar"
        raise OnnxFlopsError(f"{where}: {what} holds {stored} bytes of packed {bits}-bit values, "
                             f"but its dims ({shape}) need {needed}")


def _stored_elements(t: onnx.TensorProto, dtype: int) -> float:
    raw = t.raw_data
    if raw:
        return len(raw) / _itemsize(dtype)
    for field in _TYPED_DATA:
        n = len(getattr(t, field))
        if n:
            return n // 2 if dtype in _COMPLEX else n
    return 0


@memoized(64)
def _itemsize(dtype: int) -> int:
    return onnx.helper.tensor_dtype_to_np_dtype(dtype).itemsize
