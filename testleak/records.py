"""JSONL artifacts: one record per line, every record tagged with its schema and version.

Writers are atomic (temp file + rename); appenders flush each record so that an
interrupted stage keeps what it finished.

Readers validate (:func:`iter_jsonl`): each record's ``schema`` (``kind/version``; the kind
given by the caller, else the record's own tag), the fields every record of its kind needs
(:data:`REQUIRED`), unique ids (:data:`ID_FIELD`), and, when the producing stage wrote a stats
file next to the data (``<stem>_stats.json``, :data:`STATS_COUNT`), that the number of records
equals the count the stage reported. Every error is a :class:`DataError` naming the file and
the 1-based line and saying what to do; nothing is silently skipped or counted twice.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator, Mapping

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


# Fields every record of a kind must have (what readers index without a default).
REQUIRED = {
    "question": ("id", "scenario", "attributes", "text"),
    "response": ("id", "status"),
    "candidate": ("id", "response_id", "attribute", "value", "value_hash"),
    "verdict": ("candidate_id", "attribute", "value_hash", "rules", "judge", "kept"),
    "hit": ("candidate_id", "attribute", "value_hash", "outcome"),
    "label": ("candidate_id", "reviewer", "label"),
    "confirmed": ("candidate_id", "attribute", "value_hash", "outcome", "status"),
    "library": ("status",),
}
# The field that identifies a record; two records with the same value are an error.
# Labels are an append-only log (a later label of a reviewer replaces an earlier one).
ID_FIELD = {"question": "id", "response": "id", "candidate": "id", "verdict": "candidate_id",
            "hit": "candidate_id", "confirmed": "candidate_id"}
# The producing stage's count in <stem>_stats.json (questions: stats.json) for each kind.
STATS_COUNT = {"candidate": "candidates", "verdict": "candidates", "hit": "candidates",
               "confirmed": "records", "question": "questions", "response": "responses"}


# Outcomes of the rules step of a verdict (``rules.status``), in report order: kept by the rules,
# then the rejection reasons: ``echo`` (the candidate repeats what the prompt of its own response
# gave the model, marked ``echo_of`` by the candidates stage, testleak/echo.py), ``placeholder``
# (testleak/resources/placeholders.yaml), ``format`` (the attribute's format rule), and
# ``not_applied`` (a baseline verified as published: no rules ran).
ECHO_STATUS = "echo"
RULES_STATUSES = ("ok", ECHO_STATUS, "placeholder", "format", "not_applied")


def rules_status(rules: Mapping) -> str:
    """The rules status (:data:`RULES_STATUSES`) of a verdict's ``rules`` part; verdicts written
    before the field existed are classified from ``ok`` and the reason."""
    if rules.get("status") in RULES_STATUSES:
        return rules["status"]
    if rules.get("ok") is None:
        return "not_applied"
    if rules["ok"]:
        return "ok"
    return "placeholder" if str(rules.get("reason", "")).startswith("placeholder:") else "format"


def call_errors(kind: str, rec: Mapping) -> tuple[int, list[str]]:
    """``(calls, errors)`` behind one record: how many LLM or search calls producing it
    needed, and the messages of those that failed. ``kind`` is a record kind, or
    ``scenario_stats`` (one entry of data/questions/stats.json: attempts and errors)."""
    if kind == "response":
        return 1, ([str(rec.get("error") or "error")] if rec.get("status") == "error" else [])
    if kind == "verdict":
        j = rec.get("judge") or {}
        failed = j.get("status") == "error"
        return int(j.get("status") not in ("skipped", None)), ([str(j.get("reason") or "judge call failed")] if failed else [])
    if kind == "hit":
        failed = rec.get("outcome") == "error"
        return int(rec.get("outcome") != "filtered"), ([str(rec.get("reason") or "search failed")] if failed else [])
    if kind == "confirmed":
        return 1, ([str(rec.get("reason") or "upstream call failed")] if rec.get("status") == "error" else [])
    if kind == "scenario_stats":
        errs = [str(e) for e in rec.get("errors") or []]
        return max(int(rec.get("attempts") or 0), len(errs)), errs
    return 0, []


def stats_file(path: str | os.PathLike) -> Path:
    """The stats file the stage that wrote ``path`` leaves next to it."""
    p = Path(path)
    if p.name == "questions.jsonl" and p.parent.name == "questions":
        return p.with_name("stats.json")
    return p.with_name(p.stem + "_stats.json")


def tag(kind: str, record: dict) -> dict:
    """Return the record with its ``schema`` field set (``kind/version``)."""
    if kind not in SCHEMAS:
        raise DataError(f"unknown record kind {kind!r}; known: {sorted(SCHEMAS)}")
    out = {"schema": f"{kind}/{SCHEMAS[kind]}"}
    out.update({k: v for k, v in record.items() if k != "schema"})
    return out


def read_jsonl(path: str | os.PathLike, kind: str | None = None) -> list[dict]:
    return list(iter_jsonl(path, kind))


def _expected_count(p: Path, kind: str) -> int | None:
    key = STATS_COUNT.get(kind)
    sp = stats_file(p)
    if key is None or not sp.exists():
        return None
    try:
        stats = json.loads(sp.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, OSError) as e:
        raise DataError(f"{sp} is not valid JSON ({e}): rerun the stage that writes {p.name}") from None
    n = stats.get(key) if isinstance(stats, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def iter_jsonl(path: str | os.PathLike, kind: str | None = None, *, check_count: bool = True) -> Iterator[dict]:
    """Records of a JSONL artifact, validated (see the module docstring). ``kind`` None:
    each tagged record is checked against its own tag; untagged records are passed as read."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p} does not exist: run the stage that writes it first (dvc repro)")
    if kind is not None and kind not in SCHEMAS:
        raise DataError(f"unknown record kind {kind!r}; known: {sorted(SCHEMAS)}")
    fix = "rerun the stage that writes it (dvc repro --force the stage)"
    seen: dict[str, int] = {}
    count, file_kind = 0, kind
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{p}:{n} is not valid JSON ({e.msg}); {fix}") from None
            if not isinstance(rec, dict):
                raise DataError(f"{p}:{n} is a JSON {type(rec).__name__}, expected an object (one record per line); {fix}")
            schema = rec.get("schema")
            k = kind
            if k is None and isinstance(schema, str) and schema.split("/", 1)[0] in SCHEMAS:
                k = schema.split("/", 1)[0]
            if k is not None:
                want = f"{k}/{SCHEMAS[k]}"
                if schema != want:
                    raise DataError(f"{p}:{n} has schema {schema!r}, expected {want!r}; {fix}")
                missing = [x for x in REQUIRED.get(k, ()) if x not in rec]
                if missing:
                    raise DataError(f"{p}:{n}: {k} record without {', '.join(repr(x) for x in missing)}; {fix}")
                idf = ID_FIELD.get(k)
                if idf is not None:
                    rid = str(rec[idf])
                    if rid in seen:
                        raise DataError(f"{p}:{n}: duplicate {k} {idf} {rid!r} (first at line {seen[rid]}); {fix}")
                    seen[rid] = n
                file_kind = file_kind or k
            count += 1
            yield rec
    if check_count and file_kind is not None:
        want = _expected_count(p, file_kind)
        if want is not None and want != count:
            raise DataError(f"{p} has {count} records but {stats_file(p).name} says {want}: the file was changed "
                            f"after its stage ran; {fix}")


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
