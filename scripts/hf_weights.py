"""Seeded checkpoints of a transformers model, written as the released checkpoint stores them, for
scripts/dense_hf.py (the HF parity checks of llmprof's dense decoder family, docs/verification.md).

- released_config: a released config.json (tests/fixtures/released_configs/<name>.json) with
  fewer layers, checked to keep every layer kind the released model has (dense and MoE
  feed-forwards, sliding and full attention) as transformers itself lays the layers out.
- write_seeded: DIR/model.safetensors with seeded values, one tensor at a time (never the whole
  model in memory: DeepSeek-V3 at 2 layers is 56 GB in fp32). Values are drawn in the order of the
  transformers model's state dict (parameters as `named_parameters`, a tied head once, persistent
  buffers such as DeepSeek-V3's e_score_correction_bias where they sit) from one CPU generator:
  norm weights 1, embeddings N(0, 1), matrices N(0, 1/fan_in) (fan_in the last dimension: a
  Linear's input, a stacked expert tensor's too), other vectors N(0, 0.02²). Each tensor is then
  renamed and split as `save_pretrained` writes it (transformers' `revert_weight_conversion`:
  stacked experts `mlp.experts.gate_up_proj` [E, 2F, H] become `mlp.experts.{e}.gate_proj.weight`
  ..., Mixtral's `block_sparse_moe.experts.{e}.w1/w3/w2.weight`), so the file has the released
  names, shapes and layout.

Needs torch and transformers 5.17 (safetensors is written by hand: a JSON header, then the bytes).
"""
from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

# Above this many fp32 bytes, `store_dtype="auto"` stores bf16: the values are drawn in fp32 and
# rounded once, so both sides of an fp32 check upcast the same numbers exactly (a released bf16
# checkpoint run in fp32 is the same situation). DeepSeek-V3 at 2 layers: 56 GB fp32, 28 GB bf16.
AUTO_BF16_BYTES = 32 * 2**30


def released_config(path: str | Path, layers: int | None, first_dense: int | None) -> dict:
    """The released config.json at `path` with `layers` layers (None: all) and, for DeepSeek
    configs, `first_dense` leading dense layers (first_k_dense_replace). Exits when the shortened
    model lacks a layer kind the released one has (layer_kinds)."""
    full = json.loads(Path(path).read_text())
    d = dict(full)
    if layers is not None:
        if layers < 1:
            raise SystemExit(f"--layers {layers}: at least 1")
        d["num_hidden_layers"] = layers
    if first_dense is not None:
        if "first_k_dense_replace" not in d:
            raise SystemExit(f"--first-dense: {path} has no first_k_dense_replace (DeepSeek configs only)")
        if not 0 <= first_dense < d["num_hidden_layers"]:
            raise SystemExit(f"--first-dense {first_dense}: between 0 and layers - 1 "
                             f"({d['num_hidden_layers'] - 1}), so that an MoE layer remains")
        d["first_k_dense_replace"] = first_dense
    want, have = set(layer_kinds(full)), layer_kinds(d)
    if not want <= set(have):
        raise SystemExit(
            f"{path} at {d['num_hidden_layers']} layers lacks layer kinds {sorted(want - set(have))} "
            f"of the released model (its layers: {have}); give more layers"
            + (" or --first-dense" if "first_k_dense_replace" in d else ""))
    return d


def hf_config(d: dict):
    from transformers import AutoConfig

    return AutoConfig.for_model(**d)


def meta_model(d: dict):
    """The transformers CausalLM of config dict `d` on the meta device (shapes only)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(hf_config(d), dtype=torch.float32)


def layer_kinds(d: dict) -> list[str]:
    """Per layer, '<attention>/<feed-forward>' as transformers builds the model of `d`: the
    attention from config.layer_types (sliding_attention, full_attention; 'attention' where the
    class has no per-layer types), the feed-forward 'moe' where the layer's MLP has experts."""
    model = meta_model(d)
    types = getattr(model.config, "layer_types", None)
    kinds = []
    for i, layer in enumerate(model.model.layers):
        mlp = getattr(layer, "mlp", None) or getattr(layer, "block_sparse_moe", None)
        ffn = "moe" if hasattr(mlp, "experts") else "dense"
        kinds.append(f"{types[i] if types else 'attention'}/{ffn}")
    return kinds


def init_std(name: str, shape) -> float | None:
    """The seeded rule: None for norm weights (filled with 1), else the standard deviation."""
    if name.endswith("norm.weight"):
        return None
    if "embed_tokens" in name:
        return 1.0
    return shape[-1] ** -0.5 if len(shape) >= 2 else 0.02


def draw(name: str, shape, g):
    import torch

    std = init_std(name, shape)
    if std is None:
        return torch.ones(shape)
    return torch.randn(tuple(shape), generator=g).mul_(std)  # in place: one copy of a big tensor


def state_entries(model) -> list[tuple[str, object]]:
    """The model's state dict in order, a tensor shared by two names (a tied head) once."""
    seen, out = set(), []
    for name, t in model.state_dict(keep_vars=True).items():
        if id(t) in seen:
            continue
        seen.add(id(t))
        out.append((name, t))
    return out


# Stacked expert tensors [E, ...] (transformers' layout, experts first) are drawn and converted a
# few experts at a time (at most CHUNK_BYTES of fp32): drawing [E, ...] at once or in consecutive
# chunks gives the same numbers (CPU randn fills sequentially; each chunk a multiple of 16 values),
# and only one chunk and its pieces are in memory, not the whole stack twice (DeepSeek-V3's
# gate_up_proj of one layer is 30 GB of fp32).
STACKED = re.compile(r"\.experts\.(gate_up_proj|down_proj)$")
CHUNK_BYTES = 2**30


def _chunks(name: str, shape) -> list[tuple[int, int] | None]:
    per = int(shape[1]) * int(shape[2]) if len(shape) == 3 else 0
    if not STACKED.search(name) or per == 0 or per % 16:
        return [None]
    k = max(1, CHUNK_BYTES // (4 * per))
    return [(e, min(e + k, shape[0])) for e in range(0, shape[0], k)]


def pieces(model, name: str, shape, make):
    """(saved name, tensor) of the state-dict tensor `name` of `shape` as save_pretrained writes
    it (transformers' revert_weight_conversion), in writing order; make(shape) gives the values of
    each part drawn (meta tensors for the layout)."""
    from transformers.core_model_loading import revert_weight_conversion

    for rng in _chunks(name, shape):
        if rng is None:
            out = revert_weight_conversion(model, {name: make(tuple(shape))})
            e0 = 0
        else:
            e0, e1 = rng
            out = revert_weight_conversion(model, {name: make((e1 - e0, *shape[1:]))})
        # The reverse conversion copies (a stacked tensor's split is new memory): each piece goes
        # once it is written, and a chunk's experts are renumbered from its first one.
        for k in list(out):
            v = out.pop(k)
            if e0:
                k = re.sub(r"\.experts\.(\d+)\.", lambda m: f".experts.{int(m.group(1)) + e0}.", k, count=1)
            yield k, v


def _st_dtype(dtype) -> str:
    import torch

    return {torch.float32: "F32", torch.bfloat16: "BF16"}[dtype]


def file_size(d: dict, store_dtype: str) -> tuple[int, int, str]:
    """(tensors, parameters, store dtype) of `d`'s checkpoint; 'auto' resolved (AUTO_BF16_BYTES)."""
    model = meta_model(d)
    entries = state_entries(model)
    n = sum(t.numel() for _, t in entries)
    if store_dtype == "auto":
        store_dtype = "bf16" if 4 * n > AUTO_BF16_BYTES else "fp32"
    return len(entries), n, store_dtype


def write_seeded(d: dict, path: Path, seed: int, store_dtype: str, log=print) -> dict:
    """Writes `d`'s seeded checkpoint to `path` (see the module doc) in `store_dtype` (fp32, bf16 or
    auto); returns a summary (tensors, params, bytes, store dtype). Two passes over the model's
    tensors: on the meta device for the header (names, shapes), then drawing and writing each."""
    import torch

    model = meta_model(d)
    entries = state_entries(model)
    n_params = sum(t.numel() for _, t in entries)
    if store_dtype == "auto":
        store_dtype = "bf16" if 4 * n_params > AUTO_BF16_BYTES else "fp32"
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[store_dtype]

    # Pass 1: the saved names and shapes of every tensor, in writing order.
    layout = []
    for name, t in entries:
        for out_name, out_t in pieces(model, name, t.shape, lambda shp: torch.empty(shp, device="meta")):
            layout.append((name, out_name, tuple(out_t.shape)))
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for _, out_name, shape in layout:
        nbytes = dtype.itemsize * int(torch.Size(shape).numel())
        if out_name in header:
            raise SystemExit(f"two tensors named {out_name}")
        header[out_name] = {"dtype": _st_dtype(dtype), "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(path.parent).free
    if offset + len(raw) > free - 2**30:
        raise SystemExit(f"{path}: {offset / 1e9:.1f} GB to write, {free / 1e9:.1f} GB free (keeping 1 GiB)")
    log(f"{len(layout)} tensors, {n_params:,} parameters, {offset / 1e9:.2f} GB as {store_dtype} -> {path}")

    # Pass 2: draw each state-dict tensor, split/rename it as save_pretrained does, write it.
    g = torch.Generator(device="cpu").manual_seed(seed)
    it = iter(layout)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for name, t in entries:
            for out_name, out_t in pieces(model, name, t.shape, lambda shp: draw(name, shp, g)):
                src, want_name, want_shape = next(it)
                if (src, want_name, want_shape) != (name, out_name, tuple(out_t.shape)):
                    raise SystemExit(f"{name}: wrote {out_name} {tuple(out_t.shape)}, the header has "
                                     f"{want_name} {want_shape}")
                f.write(out_t.to(dtype).contiguous().reshape(-1).view(torch.uint8).numpy())
                del out_t
    if next(it, None) is not None:
        raise SystemExit("the header lists tensors that were not written")
    return {"tensors": len(layout), "params": n_params, "bytes": offset, "store_dtype": store_dtype}
