"""The locked environment the local corpus is built from.

The default corpus is the Python sources of the installed distributions, so the corpus (and every
hit count downstream) depends on every resolved version. ``requirements.lock`` (pip-tools, with
hashes; `scripts/bootstrap.sh` installs from it) pins them; :func:`check_locked` fails the index
stage with one line when the environment differs from it. The project's own distribution is not
part of the corpus (:data:`PROJECT`) and is not in the lock.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

from ..errors import ConfigError, DataError

PROJECT = "testleak"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def normalize(name: str) -> str:
    """PEP 503 name normalization (``Foo_Bar.baz`` -> ``foo-bar-baz``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: str | Path) -> dict[str, str]:
    """``{normalized name: version}`` of a pip-compile lock file (``name==version \\`` lines)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"verifier.local.lock_file {str(p)!r} does not exist: restore it from git, or set "
                          "verifier.local.lock_file=null to index an unlocked environment")
    pins: dict[str, str] = {}
    for line in p.read_text(encoding="utf-8").splitlines():
        m = _PIN.match(line.strip())
        if m:
            pins[normalize(m.group(1))] = m.group(2)
    if not pins:
        raise DataError(f"{p}: no `name==version` pins found: regenerate it (docs/REPRODUCIBILITY.md)")
    return pins


def installed() -> dict[str, str]:
    """``{normalized name: version}`` of the installed distributions, the project's own excluded."""
    out: dict[str, str] = {}
    for d in md.distributions():
        name = normalize(d.metadata["Name"] or "")
        if name and name != PROJECT:
            out[name] = d.version or ""
    return out


def differences(locked: dict[str, str], have: dict[str, str]) -> list[str]:
    """What differs, one short phrase per distribution, sorted by name."""
    out = []
    for name in sorted(set(locked) | set(have)):
        want, got = locked.get(name), have.get(name)
        if want == got:
            continue
        if got is None:
            out.append(f"{name} {want} locked, not installed")
        elif want is None:
            out.append(f"{name} {got} installed, not locked")
        else:
            out.append(f"{name} {got} installed, {want} locked")
    return out


def check_locked(lock_file: str | Path | None) -> None:
    """Raise a one-line :class:`DataError` when the installed distributions differ from the lock
    (``lock_file`` None: unchecked, e.g. a user's own corpus directories)."""
    if lock_file is None:
        return
    diff = differences(read_lock(lock_file), installed())
    if diff:
        shown = "; ".join(diff[:5]) + (f"; and {len(diff) - 5} more" if len(diff) > 5 else "")
        raise DataError(f"the installed distributions differ from {lock_file} ({len(diff)}: {shown}), so the corpus "
                        "would not be the locked one: run `bash scripts/bootstrap.sh setup` to install the lock")
