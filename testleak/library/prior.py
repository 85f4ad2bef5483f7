"""Privacy feature library I/O: load a library, sample prompt hints (paper Sec. 5.1).

Lambda(a) = templates (abstract contexts with the slot symbol, ``user.email = "<EMAIL>"``) and
fragments (value-level substrings and full values). Round 0 is the shipped prior
(testleak/resources/prior_library.yaml: synthetic and documented example values, each with its
source); round k+1 is data/library/<run>.json, built from run <run>'s confirmed leaks. Both load
through :func:`load_library` into ``{attr: {"templates": [...], "fragments": [...]}}``.
:func:`sample_hints` draws a prompt's few templates and fragments deterministically from a seed and
returns copies carrying their library index, so a response records exactly what it was shown.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..errors import ConfigError, DataError
from ..resources_io import parse_yaml

KINDS = ("templates", "fragments")


def _check_entry(entry: Any, where: str, kind: str) -> dict:
    if isinstance(entry, str):
        entry = {"text": entry}
    if not isinstance(entry, Mapping):
        raise DataError(f"{where}: expected a mapping with 'text' and 'source', got {type(entry).__name__}")
    text = entry.get("text")
    if not isinstance(text, str) or not text:
        raise DataError(f"{where}: entry has no non-empty 'text'; fix or remove it")
    out = dict(entry)
    out.setdefault("source", "unknown")
    if kind == "templates":
        out.setdefault("lang", "text")
    return out


def parse_library(data: Any, origin: str = "<library>") -> dict[str, dict[str, list[dict]]]:
    """Validate a parsed YAML/JSON library document and return ``{attr: {templates, fragments}}``."""
    if not isinstance(data, Mapping) or not isinstance(data.get("attributes"), Mapping):
        raise DataError(f"{origin}: a library needs a top-level 'attributes' mapping (see docs/ARCHITECTURE.md)")
    out: dict[str, dict[str, list[dict]]] = {}
    for attr, body in data["attributes"].items():
        body = body or {}
        if not isinstance(body, Mapping):
            raise DataError(f"{origin}: attribute {attr!r} must map to {{templates: [...], fragments: [...]}}")
        unknown = set(body) - set(KINDS)
        if unknown:
            raise DataError(f"{origin}: attribute {attr!r} has unknown keys {sorted(unknown)}; allowed: {list(KINDS)}")
        out[str(attr)] = {
            kind: [_check_entry(e, f"{origin}: {attr}.{kind}[{i}]", kind) for i, e in enumerate(body.get(kind) or [])]
            for kind in KINDS
        }
    return out


def read_library_document(path: str | Path) -> dict:
    """The raw document (YAML prior or JSON built library), with its metadata."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"library {p} does not exist: use 'prior' or run `python -m stages.library <run>` first")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        return parse_yaml(text)
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        raise DataError(f"library {p} cannot be parsed ({e.__class__.__name__}); restore it from git or rebuild it") from None


def load_library(path: str | Path) -> dict[str, dict[str, list[dict]]]:
    """Load a privacy feature library (prior YAML or built JSON).

    Returns ``{attr: {"templates": [{text, lang, source, ...}], "fragments": [{text, source, ...}]}}``.
    Built libraries carry extra keys per entry (``cluster``, ``source_run``, ...), kept as is.
    """
    return parse_library(read_library_document(path), str(path))


def _as_rng(rng) -> random.Random:
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, int) and not isinstance(rng, bool):
        return random.Random(rng)
    try:  # numpy Generator: derive a stdlib Random from it (deterministic for a seeded Generator)
        import numpy as np

        if isinstance(rng, np.random.Generator):
            return random.Random(int(rng.integers(0, 2**63 - 1)))
    except ImportError:  # pragma: no cover
        pass
    raise ConfigError(f"rng must be an int seed, random.Random or numpy Generator, got {type(rng).__name__}")


def sample_hints(library: Mapping[str, Mapping[str, list[dict]]], attribute: str, n_templates: int,
                 n_fragments: int, rng) -> dict[str, list[dict]]:
    """Draw up to ``n_templates`` templates and ``n_fragments`` fragments of ``attribute``.

    Sampling is without replacement, deterministic for a given seed / Random state, and in
    draw order. When the library holds fewer entries than asked, all are returned (shuffled).
    Each returned entry is a copy with ``index`` (its position in the library list) added, so
    the caller can record exactly what was shown.
    """
    if attribute not in library:
        raise ConfigError(f"attribute {attribute!r} is not in the library; known: {', '.join(sorted(library))}")
    for name, n in (("n_templates", n_templates), ("n_fragments", n_fragments)):
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ConfigError(f"{name} must be a non-negative integer, got {n!r} (experiment.hints_per_attribute)")
    r = _as_rng(rng)
    out: dict[str, list[dict]] = {}
    for kind, n in (("templates", n_templates), ("fragments", n_fragments)):
        items = list(library[attribute].get(kind) or [])
        idx = r.sample(range(len(items)), min(n, len(items)))
        out[kind] = [{**items[i], "index": i} for i in idx]
    return out
