"""Reading the per-run record lists the metrics need (ARCHITECTURE.md contracts).

Helpers validate what they rely on and fail with a :class:`~testleak.errors.DataError`
that names the stage to rerun; they never drop a record silently.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..errors import DataError
from ..methods import STATUSES, response_status  # noqa: F401 (re-exported)


def response_attributes(response: Mapping, questions: Mapping[str, Mapping] | None = None) -> tuple[str, ...]:
    """Attributes a response was asked about: its own ``attributes`` (or ``attribute``), else
    those of its question, else the union of its selected functions' attributes."""
    if response.get("attributes"):
        return tuple(dict.fromkeys(response["attributes"]))
    if response.get("attribute"):
        return (response["attribute"],)
    qid = response.get("question_id")
    if questions and qid in questions and questions[qid].get("attributes"):
        return tuple(dict.fromkeys(questions[qid]["attributes"]))
    out: dict[str, None] = {}
    for f in response.get("functions") or []:
        for a in f.get("attributes") or []:
            out[a] = None
    return tuple(out)


def is_confirmed(record: Mapping) -> bool:
    """A confirmed.jsonl record counts only when its ``status`` says ``confirmed`` (a record
    without status is not a leak; readers reject it) and it does not say ``confirmed: false``."""
    return record.get("status") == "confirmed" and record.get("confirmed", True) is not False


def confirmed_only(records: Iterable[Mapping]) -> list[Mapping]:
    return [r for r in records if is_confirmed(r)]


def key_of(record: Mapping) -> tuple[str, str]:
    """The identity of a leaked element across runs: (attribute, value_hash)."""
    try:
        return (record["attribute"], record["value_hash"])
    except KeyError as e:
        raise DataError(
            f"record {record.get('candidate_id', record.get('id'))!r} lacks {e.args[0]!r}: rerun the confirmed stage"
        ) from None


def check_attribute(attr: str, known: Iterable[str], where: str) -> str:
    known = list(known)
    if attr not in known:
        raise DataError(f"{where}: unknown attribute {attr!r}; known: {', '.join(known)}")
    return attr


def policies_of(confirmed: Iterable[Mapping], default: str | None = None) -> str:
    """The review policy recorded in confirmed records ("a+b" when mixed), else default."""
    ps = sorted({str(r.get("policy")) for r in confirmed if r.get("policy")})
    if ps:
        return "+".join(ps)
    return default or "unknown"
