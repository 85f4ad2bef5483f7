"""Run one stage entry point under a recorder (used by tests/test_pipeline_graph.py).

    python -m tests.graph_probe OUT.json stages.NAME [ARGS...]     (cwd: the project root)

Records, and writes to OUT.json:
- files the stage opens (audit events ``open``, ``sqlite3.connect``; renames count as writes of
  their target, listings ``os.listdir``/``os.scandir`` as reads of the directory),
- the params.yaml keys it reads (``testleak.stage.load_stage_params`` returns a recording mapping:
  reading a value records its dotted key; iterating or copying a mapping records the mapping's key),
- the project modules it imported (``sys.modules`` after the stage).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

ROOT = Path.cwd().resolve()
READS: set[str] = set()
WRITES: set[str] = set()
LISTS: set[str] = set()
OPENS: set[str] = set()     # sqlite: read or write
RENAMED: dict[str, str] = {}
PARAMS: set[str] = set()
CHECKED: set[str] = set()   # keys only tested for presence (`k in mapping`)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _rel(path) -> str | None:
    if path is None or isinstance(path, int):
        return None
    try:
        p = Path(os.path.abspath(os.fsdecode(path)))
    except (TypeError, ValueError):
        return None
    try:
        return p.relative_to(ROOT).as_posix()
    except ValueError:
        return None


def _hook(event: str, args) -> None:
    if event == "open":
        rel = _rel(args[0])
        if rel is None:
            return
        mode, flags = args[1], args[2] or 0
        write = bool(mode and any(c in mode for c in "wax+")) or bool(flags & _WRITE_FLAGS)
        (WRITES if write else READS).add(rel)
    elif event == "sqlite3.connect":
        db = os.fsdecode(args[0]) if not isinstance(args[0], int) else None
        if db and db.startswith("file:"):            # URI form: file:PATH?mode=ro
            db = db[len("file:"):].split("?", 1)[0]
        rel = _rel(db)
        if rel:
            OPENS.add(rel)
    elif event in ("os.rename", "os.replace"):
        src, dst = _rel(args[0]), _rel(args[1])
        if dst:
            WRITES.add(dst)
            if src:
                RENAMED[src] = dst
    elif event in ("os.remove", "os.unlink", "shutil.rmtree"):
        rel = _rel(args[0])
        if rel:
            WRITES.add(rel)
    elif event in ("os.listdir", "os.scandir"):
        rel = _rel(args[0] if args and args[0] is not None else ".")
        if rel is not None:
            LISTS.add(rel)


class RecordingDict(dict):
    """A params mapping that records which dotted keys are read."""

    def __init__(self, data, prefix: str = ""):
        super().__init__(data)
        self._prefix = prefix

    def _key(self, k) -> str:
        return f"{self._prefix}.{k}" if self._prefix else str(k)

    def _whole(self) -> None:
        PARAMS.add(self._prefix or "<all params>")

    def _value(self, k, v):
        if isinstance(v, dict) and not isinstance(v, RecordingDict):
            return RecordingDict(v, self._key(k))       # navigation: recorded when a value is used
        if not isinstance(v, RecordingDict):
            PARAMS.add(self._key(k))
        return v

    def __getitem__(self, k):
        v = super().__getitem__(k) if super().__contains__(k) else None
        if not super().__contains__(k):
            PARAMS.add(self._key(k))
            raise KeyError(k)
        return self._value(k, v)

    def get(self, k, default=None):
        if not super().__contains__(k):
            PARAMS.add(self._key(k))
            return default
        return self._value(k, super().__getitem__(k))

    def __contains__(self, k):
        CHECKED.add(self._key(k))
        return super().__contains__(k)

    def __iter__(self):
        self._whole()
        return super().__iter__()

    def keys(self):
        self._whole()
        return super().keys()

    def values(self):
        self._whole()
        return [self._value(k, v) for k, v in super().items()]

    def items(self):
        self._whole()
        return [(k, self._value(k, v)) for k, v in super().items()]

    def copy(self):
        self._whole()
        return dict(super().items())

    def __eq__(self, other):
        self._whole()
        return dict.__eq__(self, other)

    __hash__ = None

    def __reduce_ex__(self, protocol):
        self._whole()
        return (dict, (dict(super().items()),))

    def __deepcopy__(self, memo):
        import copy

        self._whole()
        return copy.deepcopy(dict(super().items()), memo)


def _project_modules() -> list[str]:
    out = []
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        rel = _rel(f) if f else None
        if rel and not rel.startswith("tests/"):
            out.append(rel)
    return sorted(set(out))


def main() -> int:
    out, module, *args = sys.argv[1:]
    import testleak.stage as stage

    real = stage.load_stage_params

    def recording_load_stage_params():
        return RecordingDict(real())

    stage.load_stage_params = recording_load_stage_params   # before the stage module imports it by name
    sys.addaudithook(_hook)
    code = 0
    try:
        mod = importlib.import_module(module)
        code = mod.main(args) or 0
    except SystemExit as e:       # a stage may exit on purpose; its reads still count
        code = e.code
    writes = {RENAMED.get(w, w) for w in WRITES}
    Path(out).write_text(json.dumps({
        "code": code, "reads": sorted(READS), "writes": sorted(writes),
        "sqlite": sorted(OPENS), "lists": sorted(LISTS), "params": sorted(PARAMS), "checked": sorted(CHECKED - PARAMS), "modules": _project_modules(),
    }, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
