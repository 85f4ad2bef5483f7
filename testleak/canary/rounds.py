"""Library rounds inside the canary calibration: a calibration run of ours whose
``library`` names another calibration run (``ours_r1: {method: ours, round: 1, library: ours}``)
asks with the library built from that run's confirmed leaks of the same model and seed and the
prior library (:func:`testleak.pipeline.library_round`, the library stage's function), written
next to the source run (data/canary/runs/<run>/library.json; raw values, data/ only).

Order: per model and seed, the runs a library comes from run first, then the reference run of
ours (the highest round), then the others; a source run of the reference runs at its own size
(the equal-cost reference is the final round; the cost of the earlier rounds is not added, as in
:mod:`testleak.equalcost`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..errors import ConfigError


def library_source(runs: Mapping[str, Mapping], key: str) -> str | None:
    """The calibration run whose confirmed leaks make the library of run ``key`` (None: a library
    file or ``prior``)."""
    lib = str(runs[key]["library"])
    if lib not in runs:
        return None
    if lib == key or runs[lib].get("method") != "ours" or runs[key].get("method") != "ours":
        raise ConfigError(f"experiment.calibration_runs.{key}.library = {lib!r}: expected another run of method "
                          f"ours (its confirmed leaks make the library), 'prior' or a library file")
    return lib


def sources(runs: Mapping[str, Mapping], key: str | None) -> list[str]:
    """The runs the library of ``key`` is built from, the earliest first (a chain of rounds)."""
    chain: list[str] = []
    while key is not None and (key := library_source(runs, key)) is not None:
        if key in chain:
            raise ConfigError(f"experiment.calibration_runs: the libraries of {', '.join(chain)} form a cycle")
        chain.insert(0, key)
    return chain


def run_order(runs: Mapping[str, Mapping], ref: str | None) -> list[str]:
    """Calibration run keys in execution order for one model and seed (see the module docstring)."""
    first = sources(runs, ref) + ([ref] if ref is not None else [])
    rest = [k for k in runs if k not in first]
    for k in rest:
        missing = [s for s in sources(runs, k) if s not in first and rest.index(s) > rest.index(k)]
        if missing:
            raise ConfigError(f"experiment.calibration_runs: {k} takes its library from {missing[0]}, listed after it")
    return first + rest


def canary_run(kind: str, key: str, seed: int) -> str:
    """The name of calibration run ``key`` on model ``kind`` at elicitation seed ``seed``."""
    return f"canary_{kind}_{key}_s{int(seed)}"


def run_library(params: Mapping, paths, key: str, kind: str, seed: int) -> str:
    """The library calibration run ``key`` asks with: its ``library`` (``prior``, a file), or the
    one built from the calibration run it names, of the same model and seed (:mod:`.rounds`)."""
    runs = params["experiment"]["calibration_runs"]
    src = library_source(runs, key)
    if src is None:
        return str(runs[key]["library"])
    from .pipeline import CanaryRunPaths

    return library_path(CanaryRunPaths(paths.root).run_dir(canary_run(kind, src, seed))).relative_to(paths.root).as_posix()


def library_path(run_dir: Path) -> Path:
    """Where the library built from a calibration run lies."""
    return Path(run_dir) / "library.json"


def build_library(params: Mapping, paths, rp, source_run: str, base: str) -> Path:
    """The library of the next round from calibration run ``source_run`` (its confirmed,
    candidates and responses under ``rp``, a :class:`.pipeline.CanaryRunPaths`) on ``base``, the
    library that run asked with (a library name or path, :meth:`testleak.paths.Paths.library`);
    returns its path."""
    from .. import pipeline
    from ..library import load_library
    from ..records import read_jsonl, write_json

    doc, _, _ = pipeline.library_round(
        params, source_run, load_library(paths.library(base)),
        read_jsonl(rp.confirmed(source_run), kind="confirmed"), read_jsonl(rp.candidates(source_run), kind="candidate"),
        read_jsonl(rp.responses(source_run), kind="response"), paths.models)
    doc["base"] = base
    out = library_path(rp.run_dir(source_run))
    write_json(out, doc)
    return out
