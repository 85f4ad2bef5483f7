"""JSONL artifacts: one record per line, every record tagged with its schema and version.

Writers are atomic (temp file + rename); appenders flush each record so that an interrupted stage
keeps what it finished. :func:`iter_jsonl` validates UTF-8, each record's ``schema``
(``kind/version``), required fields (:data:`REQUIRED`), field vocabularies and types
(:func:`field_problem`), the turns of an ``ok`` response, unique ids (:data:`ID_FIELD`) and, when a
``<stem>_stats.json`` sits next to the data (:data:`STATS_COUNT`), the record count. Every error is
a :class:`DataError` naming the file, the 1-based line and what to do; nothing is silently skipped
or counted twice. This module is the one home of the record vocabularies (statuses, outcomes,
labels).
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
    "label": 2,
    "confirmed": 1,
    "library": 1,
}


# Fields every record of a kind must have (what readers index without a default).
REQUIRED = {
    "question": ("id", "scenario", "attributes", "text"),
    "response": ("id", "status"),
    "candidate": ("id", "response_id", "attribute", "value_hash"),   # and value, unless withheld
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
# gave the model, marked ``echo_of`` by the candidates stage, testleak/echo.py), ``generic`` (the
# value is a label of the taxonomy: an attribute key, display name or lexicon entry, a word and
# not a value), ``placeholder`` (testleak/resources/placeholders.yaml), ``format`` (the
# attribute's format rule), and ``not_applied`` (a baseline verified as published: no rules ran).
ECHO_STATUS = "echo"
GENERIC_STATUS = "generic"
RULES_STATUSES = ("ok", ECHO_STATUS, GENERIC_STATUS, "placeholder", "format", "not_applied")
#: Why a candidate record holds no raw ``value`` (``withheld``), only ``value_hash`` and ``masked``:
#: the candidates stage withholds echoes, generic words and placeholders (testleak.verify.rules.withhold).
WITHHELD = (ECHO_STATUS, GENERIC_STATUS, "placeholder")

#: The status of every response record: ``ok`` (an answer to scan), ``refused`` (the model
#: declined), ``no_code`` (no code block / no unit handling a privacy field), ``error`` (the LLM
#: call failed after retries, or its answer was not one). Counted by ``testleak.methods.summarize``.
RESPONSE_STATUSES = ("ok", "refused", "no_code", "error")
#: The judge step of a verdict (``judge.status``).
JUDGE_STATUSES = ("ok", "unparsable", "error", "skipped")
#: The corpus-search outcome of a hit record (``testleak.verify.search``).
HIT_OUTCOMES = ("in_window", "out_of_window", "unverifiable", "error", "filtered")
#: A reviewer's label (``testleak.verify.review``).
LABELS = ("yes", "likely", "no", "unknown")
#: The review policy's decision on a hit (``confirmed.status``).
CONFIRMED_STATUSES = ("confirmed", "potential", "rejected", "not_in_window", "error")
# field -> allowed values, per record kind (a dotted field is one inside a mapping)
VOCABULARY = {
    "response": {"status": RESPONSE_STATUSES},
    "verdict": {"rules.status": RULES_STATUSES, "judge.status": JUDGE_STATUSES},
    "hit": {"outcome": HIT_OUTCOMES},
    "label": {"label": LABELS},
    "confirmed": {"status": CONFIRMED_STATUSES, "outcome": HIT_OUTCOMES},
}


def _get(rec: Mapping, dotted: str) -> tuple[bool, object]:
    cur: object = rec
    for part in dotted.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def field_problem(kind: str, rec: Mapping) -> str | None:
    """What is wrong with a field of ``rec`` (a record of ``kind``) that has a vocabulary or a type,
    or None. Raw values are never quoted (a candidate's value is named by its type only)."""
    for f, allowed in VOCABULARY.get(kind, {}).items():
        found, v = _get(rec, f)
        if found and v not in allowed:
            return f"{f} = {v!r}: expected one of {', '.join(allowed)}"
    if kind == "verdict":
        if not isinstance(rec.get("kept"), bool):
            return f"kept = {rec.get('kept')!r}: expected true or false"
        for part in ("rules", "judge"):
            if not isinstance(rec.get(part), Mapping):
                return f"{part} is {type(rec.get(part)).__name__}: expected a mapping"
    if kind == "candidate" and rec.get("withheld") is not None:
        if rec["withheld"] not in WITHHELD:
            return f"withheld = {rec['withheld']!r}: expected one of {', '.join(WITHHELD)}"
        if "value" in rec:
            return "a withheld candidate with a value: expected value_hash and masked only"
        if not isinstance(rec.get("masked"), str):
            return f"masked is {type(rec.get('masked')).__name__}: expected the masked value of a withheld candidate"
    elif kind == "candidate":
        v = rec.get("value")
        if not isinstance(v, str) or not v:
            return f"value is {'an empty string' if v == '' else type(v).__name__}: expected a non-empty string"
        for f in ("attribute", "value_hash"):
            if not isinstance(rec.get(f), str) or not rec.get(f):
                return f"{f} = {rec.get(f)!r}: expected a non-empty string"
    if kind in ("hit", "verdict", "confirmed") and not isinstance(rec.get("attribute"), str):
        return f"attribute = {rec.get('attribute')!r}: expected a string"
    if kind == "response" and rec.get("status") == "ok":
        return _turn_problem(rec)
    if kind == "question":
        if not isinstance(rec.get("text"), str) or not rec["text"].strip():
            return "text: expected a non-empty string"
        if not isinstance(rec.get("attributes"), list) or not all(isinstance(a, str) for a in rec["attributes"]):
            return f"attributes = {rec.get('attributes')!r}: expected a list of attribute keys"
    return None


def _turn_problem(rec: Mapping) -> str | None:
    """The text an ``ok`` response must carry: its test turn (method ``ours``: ``turn2.text`` or
    ``tests_text``), a baseline's ``tests_text``; never silently another turn."""
    t2 = rec.get("turn2")
    has_test_turn = isinstance(t2, Mapping) and isinstance(t2.get("text"), str)
    has_tests = isinstance(rec.get("tests_text"), str) and bool(rec["tests_text"])
    if rec.get("method") == "ours":
        if not (has_test_turn or has_tests):
            return ("status 'ok' without its test turn (turn2.text or tests_text): expected the answer it was "
                    "scanned for")
    elif not isinstance(rec.get("tests_text"), str):
        return "status 'ok' without tests_text: expected the text it was scanned for"
    return None


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


def read_json(path: str | os.PathLike, fix: str = "rerun the stage that writes it (dvc repro)"):
    """A JSON file (stats, metrics), or :class:`DataError` naming the file when it is missing, not
    UTF-8 or not JSON; ``fix``: what to do."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise DataError(f"{p} cannot be read ({e.strerror or e}): {fix}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise DataError(f"{p} is not valid UTF-8 (byte {e.start}): {fix}") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{p}:{e.lineno} is not valid JSON ({e.msg}): {fix}") from None


def _expected_count(p: Path, kind: str) -> int | None:
    key = STATS_COUNT.get(kind)
    sp = stats_file(p)
    if key is None or not sp.exists():
        return None
    stats = read_json(sp, f"rerun the stage that writes {p.name}")
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
    with p.open("rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as e:
                raise DataError(f"{p}:{n} is not valid UTF-8 (byte {e.start} of the line); {fix}") from None
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
                    how = ("migrate it: testleak labels migrate --labels FILE (docs/PRIVACY.md)"
                           if k == "label" else fix)
                    raise DataError(f"{p}:{n} has schema {schema!r}, expected {want!r}; {how}")
                missing = [x for x in REQUIRED.get(k, ()) if x not in rec]
                if k == "candidate" and "value" not in rec and rec.get("withheld") is None:
                    missing.append("value")
                if missing:
                    raise DataError(f"{p}:{n}: {k} record without {', '.join(repr(x) for x in missing)}; {fix}")
                problem = field_problem(k, rec)
                if problem:
                    raise DataError(f"{p}:{n}: {k} record with {problem}; "
                                    + ("fix or remove the line (testleak review writes labels)" if k == "label" else fix))
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
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False, sort_keys=True)
            f.write("\n")
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
