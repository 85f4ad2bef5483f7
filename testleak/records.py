"""JSONL artifacts: one record per line, every record tagged with its schema and version.

Writers are atomic (temp file + rename); appenders flush each record so that an
interrupted stage keeps what it finished.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from .errors import DataError

SCHEMAS = {
    "question": 1,
    "response": 1,
    "candidate": 1,
    "verdict": 1,
    "hit": 1,
    "label": 1,
    "confirmed": 1,
    "library": 1,
}


def tag(kind: str, record: dict) -> dict:
    """Return the record with its ``schema`` field set (``kind/version``)."""
    if kind not in SCHEMAS:
        raise DataError(f"unknown record kind {kind!r}; known: {sorted(SCHEMAS)}")
    out = {"schema": f"{kind}/{SCHEMAS[kind]}"}
    out.update({k: v for k, v in record.items() if k != "schema"})
    return out


def read_jsonl(path: str | os.PathLike, kind: str | None = None) -> list[dict]:
    return list(iter_jsonl(path, kind))


def iter_jsonl(path: str | os.PathLike, kind: str | None = None) -> Iterator[dict]:
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p} does not exist: run the stage that writes it first (dvc repro)")
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{p}:{n} is not valid JSON ({e.msg}); delete the file and rerun its stage") from None
            if kind is not None:
                want = f"{kind}/{SCHEMAS[kind]}"
                if rec.get("schema") != want:
                    raise DataError(f"{p}:{n} has schema {rec.get('schema')!r}, expected {want!r}")
            yield rec


def write_jsonl(path: str | os.PathLike, records: Iterable[dict], kind: str | None = None) -> int:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for r in records:
                if kind is not None:
                    r = tag(kind, r)
                f.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")
                n += 1
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


def write_json(path: str | os.PathLike, obj) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    os.replace(tmp, p)
