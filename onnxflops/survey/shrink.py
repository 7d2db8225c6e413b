"""One generic rule that makes any transformers config small: never a rule keyed on a model.

Every width becomes WIDTH (lists of stage widths in proportion, the first WIDTH), every depth DEPTH, every head count at most HEADS (key/value heads in
the same proportion), every feed-forward width FFN, every expert count at most EXPERTS, and the
vocabulary at most VOCAB (token ids beyond it wrap into it), every attention window or chunk at
most WINDOW (so that a short prompt crosses it; the 16 tokens of the other surveys do not). Sub-configs (text, vision, audio,
encoder, decoder) are shrunk by the same rule, and every list as long as a depth that was cut is
cut with it (per-layer types and sizes), and every other size equal to a width that was cut
follows it (a bottleneck as wide as the embedding).
"""

from __future__ import annotations

import re

# 96 is divisible by every head count the rule leaves (1 to 4) and by 3 (vision heads of 3).
WIDTH, DEPTH, HEADS, HEAD_DIM, FFN, VOCAB, EXPERTS, ROUTED, RANK = 96, 2, 4, 24, 192, 1000, 4, 2, 32
WINDOW = 32

_DEPTH_KEY = re.compile(r".*(layers|n_layer|depth)$")
_RULES = (  # (key pattern, new value from the old one); the first that matches applies
    (re.compile(r".*(key_value_heads|kv_heads|num_kv_groups)$"), None),  # in proportion: below
    # (a head's dim, d_head, is no count of heads: a head dim, below)
    (re.compile(r"^(?!(.*_)?d_head$).*heads?$"), lambda v: min(v, HEADS)),
    # a state-space layer's head groups: at most its heads (each group at least one head)
    (re.compile(r".*n_groups$"), lambda v: min(v, HEADS)),
    # a group norm's groups: at most HEADS, which divides every width the rule leaves
    (re.compile(r".*num_groups$"), lambda v: min(v, HEADS)),
    (re.compile(r"^(n_|num_)?(shared_experts|n_shared_experts)$"), lambda v: min(v, 1)),
    (re.compile(r".*(experts_per_tok|experts_per_token|top_?k|moe_topk|moe_k|topk_group|"
                r"n_group|expert_group)$"),
     lambda v: min(v, ROUTED)),
    (re.compile(r".*experts$"), lambda v: min(v, EXPERTS)),
    (_DEPTH_KEY, lambda v: min(v, DEPTH)),
    (re.compile(r".*(intermediate_size|ffn_dim|d_ff|n_inner|mlp_dim|ffn_hidden_size|"
                r"intermediate_dim|feed_forward_size)$"), lambda v: FFN),
    (_HEAD_DIM := re.compile(r".*(head_dim|d_kv|kv_channels|head_size|rotary_dim|(^|_)d_head)$"),
     lambda v: HEAD_DIM),
    (re.compile(r".*lora_rank$"), lambda v: RANK),
    (re.compile(r".*(sliding_window|attention_chunk_size)$"), lambda v: min(v, WINDOW)),
    (_WIDTH_RULE := re.compile(r".*(hidden_size|d_model|n_embd|n_embed|embed_dim|embedding_size|"
                               r"hidden_dim|embedding_dim|d_embed|model_dim|"
                               r"word_embed_proj_dim)$"), lambda v: WIDTH),
    # every vocabulary: Gemma 3n's per-layer input table, BLT's hashed byte groups
    (re.compile(r".*(vocab_size|vocab_size_per_layer_input|_vocab)$"), lambda v: min(v, VOCAB)),
)
_WIDTH_KEY = re.compile(r".*(size|dim|d_model|n_embd|n_embed)$")
_SIZE_KEY = re.compile(r".*_(size|dim)$")
# a codebook's size is a count of codes, a vocabulary (DAC's must be a power of 2), not a width
_NOT_A_WIDTH = re.compile(r".*(image|patch|position|vocab|window|chunk|bucket|kernel|stride|"
                          r"sampling|frame|mel|length|batch|codebook_size)")
_GROUPS_KEY = re.compile(r".*groups$")
_TOKEN_ID = re.compile(r".*(token_id|token_index|token_ids)$")
_LIST_WIDTHS = re.compile(r".*(hidden_sizes|embed_dims|dims|channels|conv_dim)$")
_KIND_LIST = re.compile(r".*_types$")  # the kind of each layer, or a pattern of them
_LIST_DEPTHS = re.compile(r".*(depths|layers)$")
_LAYER_INDICES = re.compile(r".*layer_(ids|indices)$")  # which layers are of one kind


def shrink(config, seen: set | None = None, multimodal: bool = False):
    """`config` (a transformers PretrainedConfig), shrunk in place and returned; `multimodal`:
    it is the text config of a config with a vision config."""
    if seen is None:  # the whole tree: its sizes before, for the ties across its sub-configs
        tree = _configs_of(config)
        before = [(c, dict(vars(c))) for c in tree]
        shrink(config, set(), multimodal)
        _ties_across_configs(before)
        return config
    if id(config) in seen:
        return config
    seen.add(id(config))
    root = len(seen) == 1  # no other config holds it
    values = {k: v for k, v in vars(config).items() if not k.startswith("_")}
    depths_cut: set[int] = set()
    heads_before = {k: v for k, v in values.items() if k.endswith("heads") and _is_count(v)}
    vocab = VOCAB
    widths_scales = _widths_scales(values)
    for key, value in values.items():
        if hasattr(value, "to_dict") and hasattr(value, "model_type"):
            shrink(value, seen, multimodal=key == "text_config" and "vision_config" in values)
        elif isinstance(value, dict) and value and all(hasattr(v, "to_dict") for v in value.values()):
            for sub in value.values():
                shrink(sub, seen)
        elif _is_count(value) and not _counts_stages(key, value, values) \
                and not (value == _grid_side(values) and _WIDTH_RULE.match(key.lower())):
            # (a "width" as many as the patches along the image's side is that side: SAM's
            # image_embedding_size, 64 = 1024 / 16, which its prompt encoder's grid is)
            new = _shrunk(key.lower(), value)
            if new != value:
                setattr(config, key, new)
                if _LIST_DEPTHS.match(key.lower()) or key.lower().endswith(("n_layer", "depth")):
                    depths_cut.add(value)
            if key.lower().endswith("vocab_size"):
                vocab = min(vocab, vars(config).get(key))
        elif _is_counts(value):
            lowered = key.lower()
            if _LIST_DEPTHS.match(lowered):
                setattr(config, key, [min(v, 1) for v in value])
            elif key in widths_scales:
                setattr(config, key, _widths_scaled(value, widths_scales[key],
                                                    values.get("num_channels")))
            elif lowered.endswith("heads"):
                setattr(config, key, [min(v, HEADS) for v in value])
    _kv_heads_in_proportion(config, values, heads_before)
    _unset_head_dims_derived(config, values)
    _widths_keep_their_multiple(config, values)
    _heads_fill_inner_width(config, values)
    _heads_times_head_dim_follows(config, values)
    _head_dim_sums_follow(config, values)
    _rotary_head_dims_keep_their_share(config, values)
    _rotary_factors_over_heads_keep_their_width(config, values, heads_before)
    _rope_sections_fit(config, multimodal)
    _tied_sizes_follow(config, values)
    _blocks_follow_their_depth(config, values)
    kept = {depth: _layers_kept(config, depth) for depth in depths_cut}
    _depth_holds_each_kind(config, values, max([*map(len, kept.values()), DEPTH,
                                                *_pattern_depths(config, depths_cut)]))
    _periods_within_depth(config)
    _shared_layers_in_proportion(config, values)
    _width_parts_in_proportion(config, values)
    _equal_width_parts_follow(config, values)
    if root:  # a parent may read the widths a coefficient makes
        _width_coefficients_follow(config, values)
    _width_factors_keep_their_multiple(config, values)
    for key, value in vars(config).items():
        if isinstance(value, (list, tuple)) and len(value) in depths_cut \
                and not _TOKEN_ID.match(key):
            setattr(config, key, type(value)(value[i] for i in kept[len(value)]))
        elif _LAYER_INDICES.match(key.lower()) and depths_cut and _is_indices(value) \
                and max(value) < max(depths_cut):
            setattr(config, key, _indices_kept(value, kept[max(depths_cut)]))
        elif _TOKEN_ID.match(key.lower()) and _is_count(value) and value >= vocab:
            setattr(config, key, value % vocab)
        elif _TOKEN_ID.match(key.lower()) and _is_counts(value):
            setattr(config, key, [v % vocab for v in value])
    return config


def _grid_side(values: dict) -> int | None:
    """image_size // patch_size: the patches along the image's side, where the config sets both."""
    image, patch = values.get("image_size"), values.get("patch_size")
    return image // patch if _is_count(image) and _is_count(patch) else None


def _counts_stages(key: str, value: int, values: dict) -> bool:
    """Whether `key` is a depth that counts the stages of a per-stage list of depths (Swin's
    num_layers = len(depths) = 4): the stages stay, each cut to one layer. Cut to 2, the lists
    of 4 went with it, and a backbone whose out_features name stage 4 (Grounding DINO's) failed."""
    return _DEPTH_KEY.match(key.lower()) is not None and any(
        _is_counts(v) and len(v) == value for k, v in values.items() if k.lower().endswith("depths"))


def _widths_scales(values: dict) -> dict[str, int]:
    """For each list of stage widths (hidden_sizes, *_channels) of the config, the width that
    becomes WIDTH when it is cut: the widest first stage among the lists that share a width with
    it (HGNetV2's stem_channels, stage_in_channels, stage_mid_channels, stage_out_channels: one
    model's stages, joined by the widths they share), where that first stage is wider than WIDTH.
    Lists that share no width each keep their own first."""
    lists = {k: v for k, v in values.items() if _is_counts(v) and _LIST_WIDTHS.match(k.lower())}
    groups: list[set[str]] = []
    for key in lists:
        joined = [g for g in groups if any(set(lists[key]) & set(lists[k]) for k in g)]
        groups = [g for g in groups if g not in joined] + [{key}.union(*joined)]
    scales = {}
    for group in groups:
        widest = max(lists[k][0] for k in group)
        scales.update({k: widest for k in group if widest > WIDTH})
    return scales


def _widths_scaled(widths, widest: int, image) -> list[int]:
    """w · WIDTH / `widest` for each stage width w (_widths_scales): the stages keep their ratios,
    and a width that is one size in two lists stays one (HGNetV2's stage_in_channels [48, 128, …]
    are the stage_out_channels [128, …] of the stage before; each list cut by its own first, 128
    became 96 in one and 48 in the other). The `image`'s channels (num_channels, a stem's first
    width) are not a width: kept."""
    return [v if i == 0 and v == image else max(1, v * WIDTH // widest)
            for i, v in enumerate(widths)]


def _layers_kept(config, depth: int) -> list[int]:
    """Which of `depth` layers a cut keeps, in order: first those that show a kind of layer the
    per-layer lists of names have not shown yet, most new kinds first (Kimi's attention
    [linear ×4, full] beside its MLPs [dense, sparse ×26]: layers 0 and 4, dense and sparse,
    linear and full), then the first others; DEPTH of them, more where DEPTH cannot show every
    kind. Cut to its first layers a hybrid (Qwen3.5: three linear-attention layers, then one
    full) would be another model, one that some models refuse to run."""
    named = [v for v in vars(config).values() if isinstance(v, (list, tuple)) and len(v) == depth
             and all(isinstance(x, str) for x in v)]
    kinds = {(k, v[i]) for k, v in enumerate(named) for i in range(depth)}
    kept: list[int] = []
    shown: set = set()
    while len(kept) < depth and (len(kept) < DEPTH or shown != kinds):
        new = {i: len({(k, v[i]) for k, v in enumerate(named)} - shown)
               for i in range(depth) if i not in kept}
        best = max(new, key=lambda i: (new[i], -i))  # most new kinds, the first of equals
        kept.append(best)
        shown |= {(k, v[best]) for k, v in enumerate(named)}
    return sorted(kept)


def _indices_kept(indices: list[int], kept: list[int]) -> list[int]:
    """The layers of `indices` the cut kept, renumbered among the `kept` (Zamba2's hybrid layers
    [6, 12, …, 51] of 54, of which layers [0, 6] are kept: [1])."""
    return [kept.index(i) for i in indices if i in kept]


def _pattern_depths(config, depths_cut: set[int]) -> list[int]:
    """The layers each per-layer pattern needs to show every kind of layer it names once: a list
    of names shorter than a depth that was cut repeats along the layers (RecurrentGemma's
    block_types: recurrent, recurrent, attention), so its last kind's first layer + 1."""
    needed = []
    for key, value in vars(config).items():
        if _KIND_LIST.match(key.lower()) and isinstance(value, list) \
                and all(isinstance(v, str) for v in value) \
                and any(1 < len(value) < depth for depth in depths_cut):
            needed.append(max(value.index(v) for v in set(value)) + 1)
    return needed


def _periods_within_depth(config) -> None:
    """Every layer period (`attn_layer_period`: one attention layer every 8, at `…_offset` 4;
    Jamba) made at most DEPTH and its offset taken modulo it, so that the layers left hold each
    kind; the period and offset as the rule found them otherwise."""
    for key, value in list(vars(config).items()):
        offset_key = key[:-len("period")] + "offset" if key.endswith("period") else None
        offset = vars(config).get(offset_key) if offset_key else None
        if _is_count(value) and value > DEPTH and isinstance(offset, int) \
                and not isinstance(offset, bool):
            setattr(config, key, DEPTH)
            setattr(config, offset_key, offset % DEPTH)


def _shared_layers_in_proportion(config, before: dict) -> None:
    """Layers that reuse others' caches (`num_kv_shared_layers`: Gemma 3n's last 15 of 35) are
    as large a share of the depth after the cut, rounded down: 15 · 2 / 35 → 0. Left at 2 of 2,
    no layer made the keys the shared ones read, and the model refused to build."""
    depth = next((k for k in ("num_hidden_layers", "num_layers", "n_layer")
                  if _is_count(before.get(k))), None)
    for key, value in before.items():
        if depth and key.lower().endswith("shared_layers") and _is_count(value) \
                and value < before[depth]:
            setattr(config, key, value * vars(config)[depth] // before[depth])


def _width_parts_in_proportion(config, before: dict) -> None:
    """A list of sizes that summed to the model's width before the cut (Reformer's axial position
    embeddings, (64, 192) of 256) keeps its proportions and sums to the width after: (24, 72)."""
    main = _main_width(before)
    for key, value in before.items():
        if main and _is_counts(value) and len(value) > 1 and sum(value) == before[main] \
                and vars(config).get(key) == value:
            width = vars(config)[main]
            parts = [v * width // before[main] for v in value]
            parts[-1] += width - sum(parts)
            setattr(config, key, type(value)(parts))


def _width_factors_keep_their_multiple(config, before: dict) -> None:
    """Where the config rounds sizes up to a multiple it names (`…multiple_of`) and the width
    times each of its dim factors (`…dim_factor`) was a whole multiple of it before the cut, the
    width is the least one above the cut's that keeps it so, and splits into the heads: xLSTM's
    4096 · 0.5 = 32 · 64 query/key width; cut to 96, 48 rounded up to 64 in its cache and not in
    its projections, which met. 128 · 0.5 = 64: the width is 128. Every size that was the width
    follows it."""
    main = _main_width(before)
    multiples = {v for k, v in before.items() if k.lower().endswith("multiple_of") and _is_count(v)}
    factors = [v for k, v in before.items() if k.lower().endswith("dim_factor")
               and isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]
    if not (main and multiples and factors) or vars(config).get(main) == before[main]:
        return
    heads = _derived_head_dim(config) and next(
        vars(config)[k] for k in ("num_attention_heads", "n_head", "num_heads")
        if _is_count(vars(config).get(k)))

    def whole(width: int) -> bool:
        return all(width * f % m == 0 for f in factors for m in multiples)

    width = vars(config)[main]
    if not whole(before[main]) or whole(width):
        return
    new = next(w for w in range(width, before[main] + 1) if whole(w) and w % (heads or 1) == 0)
    for key, value in before.items():
        if value == before[main] and vars(config).get(key) == width:
            setattr(config, key, new)


def _blocks_follow_their_depth(config, before: dict) -> None:
    """A count of blocks (`…blocks`) that equalled a depth of its part the rule cut (the same
    prefix: none for num_blocks and num_hidden_layers) is that depth: the same layers under a
    second name (xLSTM's num_blocks = num_hidden_layers = 32; left at 32 over
    2, the model built 32 blocks and its cache 2)."""
    def part(key: str) -> str:  # the part a count names: "" for num_blocks, "c2f_" for c2f_…
        return re.sub(r"(num_|n_)?(hidden_)?(blocks|layers|layer)$", "", key.lower())

    cut = {(before[k], part(k)): vars(config)[k] for k in before if _is_count(before[k])
           and _DEPTH_KEY.match(k.lower()) and vars(config).get(k) != before[k]}
    for key, value in before.items():
        if key.lower().endswith("blocks") and _is_count(value) \
                and (value, part(key)) in cut and vars(config).get(key) == value:
            setattr(config, key, cut[value, part(key)])


def _width_coefficients_follow(config, before: dict) -> None:
    """A width coefficient (`width_coefficient`: the model's own widths times it) that a cut
    width was a whole base times (EfficientNet's hidden_dim, 2560 = 1280 · 2.0, its code's 1280
    scaled) is the cut width over that base: 96 / 1280 = 0.075, so the model's widths shrink with
    it and its last conv is as wide as hidden_dim (left at 2.0, that conv had 2560 channels and
    its norm 96). Only in a config no other holds: ALIGN's projection_dim, 640, is its
    EfficientNet tower's last stage, 320 · 2.0, which a coefficient of 0.075 made 24."""
    for coef_key, coef in before.items():
        if not (coef_key.lower().endswith("width_coefficient") and isinstance(coef, float)
                and coef > 0):
            continue
        for key, value in before.items():
            new = vars(config).get(key)
            if _is_count(value) and _is_count(new) and new < value \
                    and float(value / coef).is_integer() and _WIDTH_KEY.match(key.lower()):
                setattr(config, coef_key, new / (value / coef))
                break


def _equal_width_parts_follow(config, before: dict) -> None:
    """Sizes no rule cut, two or more of one value that divides the model's width, are parts of
    it laid side by side, and keep their share of it: LayoutLMv3's coordinate_size and
    shape_size, 128 each, whose 4 + 2 embeddings (x, y, w, h; width, height) are concatenated
    to its width, 768 → 96: 16 each (left at 128, the embeddings summed to 768 beside 96)."""
    main = _main_width(before)
    if not main or vars(config).get(main) == before[main]:
        return
    old, new = before[main], vars(config)[main]
    left = [k for k, v in before.items() if k != main and _is_count(v) and v < old
            and old % v == 0 and (new * v) % old == 0 and vars(config).get(k) == v
            and _names_a_width(k, _SIZE_KEY)]
    for key in left:
        if sum(before[k] == before[key] for k in left) >= 2:
            setattr(config, key, new * before[key] // old)


def _depth_holds_each_kind(config, before: dict, depth: int) -> None:
    """Each depth the rule cut to DEPTH made `depth` where a cut keeps more layers, one per kind
    (_layers_kept)."""
    for key, value in before.items():
        if depth > DEPTH and _is_count(value) and vars(config).get(key) == DEPTH < value \
                and _DEPTH_KEY.match(key.lower()):
            setattr(config, key, min(value, depth))


def _shrunk(key: str, value: int) -> int:
    for pattern, rule in _RULES:
        if pattern.match(key):
            return value if rule is None else rule(value)
    return value


def _tied_sizes_follow(config, before: dict) -> None:
    """A size the rule does not name that equals a width it cut (a bottleneck as wide as the
    embedding) is cut with it: equal sizes are most often one size used twice. So is a count of
    groups equal to it: a depthwise conv's, one group a channel (Mimi's upsample_groups = its
    hidden_size, 512: left at 512 over 96 channels, its conv refused to build)."""
    cut = {before[k]: vars(config).get(k) for k in before
           if _is_count(before[k]) and vars(config).get(k) != before[k] and _WIDTH_KEY.match(k)}
    for key, value in before.items():
        if (_is_count(value) and value in cut and vars(config).get(key) == value
                and (_SIZE_KEY.match(key) or _GROUPS_KEY.match(key.lower()))
                and not _NOT_A_WIDTH.match(key)):
            setattr(config, key, cut[value])


def _configs_of(config) -> list:
    """`config` and every sub-config under it (text, vision, a dict of them), each once."""
    found, todo = [], [config]
    while todo:
        c = todo.pop()
        if any(c is f for f in found):
            continue
        found.append(c)
        for v in vars(c).values():
            if hasattr(v, "to_dict") and hasattr(v, "model_type"):
                todo.append(v)
            elif isinstance(v, dict) and v and all(hasattr(x, "to_dict") for x in v.values()):
                todo.extend(v.values())
    return found


_TIED_KEY = re.compile(r".*(size|dim|channels|d_model)$")


def _names_a_width(key: str, pattern: re.Pattern) -> bool:
    """Whether `key` is of the `pattern` of sizes and names a width: not an image's, a patch's or
    another size _NOT_A_WIDTH names, and not a head dim."""
    key = key.lower()
    return bool(pattern.match(key)) and not _NOT_A_WIDTH.match(key) and not _HEAD_DIM.match(key)


def _ties_across_configs(before: list) -> None:
    """A size the rule left as it was that equals, in the config before the cut, a width the
    rule cut in another sub-config, is cut with it where every cut of that width agrees: the
    sub-configs of one model meet at those sizes (SAM's vision output_channels, 256, are its
    prompt encoder's hidden_size; X-CLIP's projection_dim, 512, its text hidden_size). Within one
    config, _tied_sizes_follow ties them."""
    cuts: dict[int, set[int]] = {}
    for c, values in before:
        for k, v in values.items():
            new = vars(c).get(k)
            if _is_count(v) and _is_count(new) and new < v and _names_a_width(k, _WIDTH_KEY):
                cuts.setdefault(v, set()).add(new)
    # each stage width of each config's lists of them, as its list was cut (HGNetV2's 512 → 192)
    stages: dict[int, dict[int, set[int]]] = {}
    for c, values in before:
        for k, v in values.items():
            new = vars(c).get(k)
            if _is_counts(v) and _is_counts(new) and len(new) == len(v) and new != v \
                    and _LIST_WIDTHS.match(k.lower()):
                for old_width, new_width in zip(v, new):
                    stages.setdefault(id(c), {}).setdefault(old_width, set()).add(new_width)
    for c, values in before:
        # its sub-configs' stage widths (a backbone's), where each was cut to one width
        below = {id(sub) for sub in _configs_of(c) if sub is not c}
        theirs: dict[int, set[int]] = {}
        for owner, widths in stages.items():
            if owner in below:
                for w, news in widths.items():
                    theirs.setdefault(w, set()).update(news)
        theirs = {w: next(iter(n)) for w, n in theirs.items() if len(n) == 1}
        for k, v in values.items():
            # a list of widths all of which another config's stages had (PP-DocLayout-V3's
            # encoder_in_channels, [512, 1024, 2048], its backbone's last three stages): as they
            # were cut ([192, 384, 768]; cut by its own first, [96, 192, 384], they did not meet)
            if _is_counts(v) and _LIST_WIDTHS.match(k.lower()) and all(w in theirs for w in v) \
                    and any(w > WIDTH for w in v) and _is_counts(vars(c).get(k)):
                setattr(c, k, type(v)(theirs[w] for w in v))
            # a width left that another config's stage had (its x4_feat_dim, 128, the backbone's
            # first stage: 48)
            elif _is_count(v) and v in theirs and v not in cuts and vars(c).get(k) == v \
                    and _names_a_width(k, _TIED_KEY):
                setattr(c, k, theirs[v])
    for c, values in before:
        for k, v in values.items():
            if _is_count(v) and len(cuts.get(v, ())) == 1 and vars(c).get(k) == v \
                    and _names_a_width(k, _TIED_KEY):
                setattr(c, k, next(iter(cuts[v])))
            # positional features, a sine and a cosine half of a width (SAM's num_pos_feats,
            # 128 of the prompt encoder's 256): half the width after the cut
            elif _is_count(v) and k.lower().endswith("pos_feats") and vars(c).get(k) == v \
                    and len(cuts.get(2 * v, ())) == 1:
                setattr(c, k, next(iter(cuts[2 * v])) // 2)


def _main_width(values: dict) -> str | None:
    """The key of the model's width: the first of hidden_size, d_model, n_embd it sets."""
    return next((k for k in ("hidden_size", "d_model", "n_embd") if _is_count(values.get(k))),
                None)


def _widths_keep_their_multiple(config, before: dict) -> None:
    """A second width that was a whole multiple m > 1 of the model's width is m · WIDTH, not
    WIDTH: Zamba2's attention reads the hidden state beside the embedding, attention_hidden_size
    = 2 · hidden_size (5120 of 2560 → 192; cut to 96, its projection met 192 features). So is
    one no rule names, left as it was: XCodec2's quantization_dim, its semantic and acoustic
    states side by side, 2 · 1024 → 192 (left at 2048, its quantizer met 192 features)."""
    main = _main_width(before)
    for key, value in before.items():
        if main and key != main and _is_count(value) and value > before[main] \
                and value % before[main] == 0 and vars(config).get(key) in (WIDTH, value) \
                and _WIDTH_KEY.match(key.lower()) and not _NOT_A_WIDTH.match(key.lower()):
            setattr(config, key, value // before[main] * vars(config)[main])


def _heads_fill_inner_width(config, before: dict) -> None:
    """head dim = expand · width / heads, for heads and a head dim of one part (their names
    share a stem: mamba_num_heads, mamba_head_dim) whose product was expand · width before the
    cut: a state-space layer splits its inner width into heads (Mamba2: 128 × 64 = 2 × 4096;
    4 heads of the generic 24 filled 96 of 192, and its reshape failed)."""
    main = _main_width(before)
    expand = next((k for k, v in before.items() if k.lower().endswith("expand") and _is_count(v)),
                  None)
    if not (main and expand):
        return
    inner_before = before[expand] * before[main]
    inner = vars(config)[expand] * vars(config)[main]
    for heads, count in before.items():
        if not (_is_count(count) and heads.lower().endswith("heads")):
            continue
        for dim, size in before.items():
            if _is_count(size) and _STEM_HEAD_DIM.match(dim.lower()) \
                    and _stem(heads) == _stem(dim) and count * size == inner_before \
                    and inner % vars(config)[heads] == 0:
                setattr(config, dim, inner // vars(config)[heads])


def _heads_times_head_dim_follows(config, before: dict) -> None:
    """A size no rule cut that was heads × head dim of one part (their names share a stem:
    mamba_n_heads, mamba_d_head) is their product after the cut: Falcon-H1's state-space inner
    width, mamba_d_ssm = 128 × 8 = 1024 → 4 × 8 = 32 (left at 1024, its heads met 32 values)."""
    for heads, count in before.items():
        if not (_is_count(count) and heads.lower().endswith("heads")):
            continue
        for dim, size in before.items():
            if not (_is_count(size) and _STEM_HEAD_DIM.match(dim.lower())
                    and _stem(heads) == _stem(dim) and _stem(dim)):
                continue
            for key, value in before.items():
                if key not in (heads, dim) and _is_count(value) and value == count * size \
                        and vars(config).get(key) == value and _stem(key) & _stem(dim) \
                        and not _NOT_A_WIDTH.match(key.lower()):
                    setattr(config, key, vars(config)[heads] * vars(config)[dim])


def _head_dim_sums_follow(config, before: dict) -> None:
    """A head dim that was the sum of two head dims named as its parts (its name's prefix, then
    a word more) is their sum after the cut: latent attention's query/key head dim, qk_head_dim
    = qk_nope_head_dim + qk_rope_head_dim (LongCat-Flash split its 24 into [24, 24])."""
    dims = {k: v for k, v in before.items() if _is_count(v) and _HEAD_DIM.match(k.lower())}
    for key, value in dims.items():
        prefix = key[:-len("head_dim")] if key.endswith("_head_dim") else ""
        parts = [(a, b) for a in dims for b in dims
                 if prefix and a < b and key not in (a, b) and a.startswith(prefix)
                 and b.startswith(prefix) and dims[a] + dims[b] == value]
        if len(parts) == 1:
            a, b = parts[0]
            setattr(config, key, vars(config)[a] + vars(config)[b])
            # the model's head_dim, as wide as the sum before (Mistral 4's, whose rotary share
            # is qk_rope_head_dim): the sum too; a value head dim of that width is its own
            if before.get("head_dim") == value and key != "head_dim" \
                    and vars(config).get("head_dim") == HEAD_DIM:
                setattr(config, "head_dim", vars(config)[key])


def _rotary_head_dims_keep_their_share(config, before: dict) -> None:
    """A rotary head dim (its name says rope) that was head_dim · partial_rotary_factor is so
    after the cut: DOTS3's qk_rope_head_dim, 64 = 256 · 0.25, is 24 · 0.25 = 6 (left at 24 it
    met the 6 rotary channels head_dim's share gives)."""
    head_dim = vars(config).get("head_dim")
    factor = _rotary_factor(config)
    if not (_is_count(head_dim) and _is_count(before.get("head_dim")) and factor
            and factor < 1):
        return
    for key, value in before.items():
        if "rope" in key.lower() and _is_count(value) and _HEAD_DIM.match(key.lower()) \
                and value == before["head_dim"] * factor \
                and vars(config)[key] != head_dim * factor and (head_dim * factor) % 2 == 0:
            setattr(config, key, int(head_dim * factor))


def _rotary_factors_over_heads_keep_their_width(config, before: dict, heads_before: dict) -> None:
    """A partial_rotary_factor above 1 rotates more than a head: a share of the width, factor /
    heads, which it keeps when the heads are cut (EfficientLoFTR's 4 over 8 heads, half the
    width: 2 over 4; left at 4, its rotary table was twice the positions' embedding width)."""
    heads = next((k for k in ("num_attention_heads", "n_head", "num_heads") if k in heads_before),
                 None)
    rope = vars(config).get("rope_parameters")
    if not heads or not isinstance(rope, dict) or vars(config)[heads] == heads_before[heads]:
        return
    factor = _rotary_factor(config)
    if factor and factor > 1 and "partial_rotary_factor" in rope:
        rope["partial_rotary_factor"] = factor * vars(config)[heads] / heads_before[heads]


def _rotary_factor(config, per_kind: bool = True) -> float | None:
    """The one partial_rotary_factor the config sets (in its rope_parameters, in each of its
    per-kind rope_parameters, or as its own attribute; 1 rotates a whole head), a positive
    number; None where it sets none, or several that differ (`per_kind` False: those of one kind
    of layer are not read; rotary sections stand beside a rope_type, not among kinds). Below 1 it is a share of each head
    (_rotary_head_dims_keep_their_share, _rope_sections_fit); above 1, a share of the width over
    the heads (_rotary_factors_over_heads_keep_their_width)."""
    rope = vars(config).get("rope_parameters")
    parts = [rope] if isinstance(rope, dict) and "rope_type" in rope \
        else list(rope.values()) if isinstance(rope, dict) and per_kind else []
    found = {p.get("partial_rotary_factor") for p in parts if isinstance(p, dict)} \
        | {vars(config).get("partial_rotary_factor")}
    factors = {f for f in found if isinstance(f, (int, float)) and not isinstance(f, bool)
               and f > 0}
    return next(iter(factors)) if len(factors) == 1 else None


_STEM_HEAD_DIM = re.compile(r".*(head_?dim|d_head)$")


def _stem(key: str) -> frozenset:
    """A heads or head-dim key's words, less those that say heads or dims (mamba_num_heads,
    mamba_head_dim, n_mamba_heads, mamba_headdim: {"mamba"}; num_heads, head_dim: {})."""
    return frozenset(re.split(r"_", key.lower())) - {"num", "n", "heads", "head", "dim",
                                                     "headdim", "d"}


_KV_HEADS_PER_LAYER = re.compile(r".*(key_value_heads|kv_heads)_per_layer$")


def _kv_heads_in_proportion(config, before: dict, heads_before: dict) -> None:
    """Key/value heads · new heads / old heads, each against the head count of its own part (an
    encoder's and a decoder's: the heads key sharing its prefix), else the model's own."""
    default = next((k for k in ("num_attention_heads", "n_head", "num_heads",
                                "encoder_attention_heads") if k in heads_before), None)
    for key, value in before.items():
        if _is_counts(value) and _KV_HEADS_PER_LAYER.match(key.lower()) and default:
            # per layer (Sapiens2's num_key_value_heads_per_layer, 16 or 8 of 16 heads): each in
            # the same proportion, 4 or 2 of 4 (left at 16 over 4 query heads, its reshape failed)
            old_heads, new_heads = heads_before[default], vars(config).get(default)
            setattr(config, key, type(value)(max(1, v * new_heads // old_heads) for v in value))
            continue
        if not (_is_count(value) and re.match(_RULES[0][0], key.lower())):
            continue
        heads = _heads_of_part(key, heads_before) or default
        if heads:
            old_heads, new_heads = heads_before[heads], vars(config).get(heads)
            setattr(config, key, max(1, value * new_heads // old_heads))


def _unset_head_dims_derived(config, before: dict) -> None:
    """A head dim left unset (None) is width / heads, as the model would derive it, where the
    config names both: some models read it without deriving it (Ministral: head_dim ** -0.5)."""
    derived = _derived_head_dim(config)
    for key, value in before.items():
        if value is None and _HEAD_DIM.match(key.lower()) and derived:
            setattr(config, key, derived)


def _derived_head_dim(config) -> int | None:
    """width // heads: the first of hidden_size, d_model, n_embd over the first of
    num_attention_heads, n_head, num_heads the config sets; None where it lacks either."""
    width = next((vars(config)[k] for k in ("hidden_size", "d_model", "n_embd")
                  if _is_count(vars(config).get(k))), None)
    heads = next((vars(config)[k] for k in ("num_attention_heads", "n_head", "num_heads")
                  if _is_count(vars(config).get(k))), None)
    return width // heads if width and heads else None


def _rope_sections_fit(config, multimodal: bool) -> None:
    """Multimodal rotary sections (transformers' `mrope_section`, time/height/width parts of half
    the head dim; models default them to their full size's [16, 24, 24]) split the cut head
    dim's half in three: [h − 2⌊h/3⌋, ⌊h/3⌋, ⌊h/3⌋], h = head_dim // 2. Only where the config
    reads sections and sets none: its class declares `mrope_section` among its rotary keys
    (ignore_keys_at_rope_validation), or it is the text config of a `multimodal` one, whose
    models read them undeclared (PaddleOCR-VL); a text-only config (Llama) gets none."""
    rope = vars(config).get("rope_parameters")
    declared = "mrope_section" in (getattr(type(config), "ignore_keys_at_rope_validation",
                                           None) or ())
    head_dim = vars(config).get("head_dim") or _derived_head_dim(config)
    if not isinstance(rope, dict) or "mrope_section" in rope or not _is_count(head_dim) \
            or not (declared or multimodal):
        return
    # the sections split the rotary part's half: the head dim's partial_rotary_factor share
    # (GLM-4V-MoE's half of 24: [2, 2, 2], not [4, 4, 4] over 6 channels)
    factor = _rotary_factor(config, per_kind=False)
    share = factor if factor and factor < 1 else 1
    half = int(head_dim * share) // 2
    rope["mrope_section"] = [half - 2 * (half // 3), half // 3, half // 3]


def _heads_of_part(kv_key: str, heads_before: dict) -> str | None:
    """The query head count beside `kv_key`, by the part's prefix (encoder_num_key_value_heads:
    encoder_num_attention_heads); None where the key has no prefix or no one count shares it."""
    prefix = re.sub(r"(num_)?(key_value_heads|kv_heads|num_kv_groups)$", "", kv_key.lower())
    shared = [k for k in heads_before if prefix and k.lower().startswith(prefix)
              and not re.match(_RULES[0][0], k.lower())]
    return shared[0] if len(shared) == 1 else None


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _is_counts(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(_is_count(v) for v in value)


def _is_indices(value) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
