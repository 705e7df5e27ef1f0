"""Architectures for the Python reference scripts, read from the one place llmprof keeps them:
conf/model/<family>/arch/<preset>.yaml (the same files the Rust code composes and its fallbacks
embed). A script never spells an architecture's numbers itself.
"""
from __future__ import annotations

from pathlib import Path

CONF = Path(__file__).resolve().parent.parent / "conf" / "model"


def arch(family: str, preset: str) -> dict:
    """conf/model/<family>/arch/<preset>.yaml as a dict (PyYAML; the torch venv has it)."""
    try:
        import yaml
    except ImportError as e:
        raise SystemExit("reading conf/ needs PyYAML: `pip install pyyaml` into this venv "
                         "(transformers' venv has it)") from e

    path = CONF / family / "arch" / f"{preset}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (CONF / family / "arch").glob("*.yaml"))
        raise SystemExit(f"no architecture {preset!r} of {family} ({path}); known: {', '.join(known)}")
    with path.open() as f:
        return yaml.safe_load(f)


def presets(family: str) -> list[str]:
    """The architecture presets of `family` in conf/, by name."""
    return sorted(p.stem for p in (CONF / family / "arch").glob("*.yaml"))
