"""ExtractPII: candidate privacy values from generated test code (paper section 4.2, B.2).

``extract(text, taxonomy)`` parses every code block of an answer (Python with ``ast``, anything
else or unparsable Python with the tolerant lexer), binds each literal to its key / parameter /
variable name (or to an attribute a trailing comment names: :func:`.lexer.comment_keys`), splits
multi-value literals (JSON, SQL, CSV, text: :mod:`.multivalue`), classifies each value
(:mod:`.detect`; a value inside a one-line literal, such as a header's credential or a
``"Email: ..."`` line's address, on its own: :mod:`.embedded`), drops values verbatim in the
prompt texts and deduplicates by (value, attribute).
Prose outside code fences is not read for values (the paper takes values from test inputs only).
Deterministic, no I/O, never raises on text. ``test_index`` is the innermost test case holding the
value (test functions, ``it()`` blocks, parametrize rows, "Test case N" markers; numbered by start),
0 when in none.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Iterable

from ..privacy import value_hash
from ..taxonomy import Taxonomy
from ..formats import CodeBlock, split_code_blocks
from .detect import CHECKS, Detector
from .lexer import comment_keys, cut_literal, lex, masked_code
from .lexkeys import collect_c_signatures
from .literals import TRANSFORMED_KEY, Literal, Parsed, trimmed
from .multivalue import split_values, sql_statements
from .prose import field_lines, mentions, prose_spans
from .doctests import doctest_literals
from .embedded import classify_embedded
from .pyparse import collect_signatures, parse_python, parse_tree
from .keys import LIBRARY_SIGNATURES
from .usekeys import use_keys

_PROSE_MARK = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}[ \t]*|[-*+][ \t]+|\d+\.[ \t]+)?(?:\*\*|__)?[ \t]*(?:test[ \t]*[- ]?case|test)[ \t]*#?[ \t]*\d+\b",
    re.I | re.M,
)
_COMMENT_MARK = re.compile(
    r"^[ \t]*(?:#|//|/\*|--)[ \t]*(?:test[ \t]*[- ]?case|test)[ \t]*#?[ \t]*\d+\b", re.I | re.M)

_DETECTORS: dict[int, tuple[Taxonomy, Detector]] = {}


def detector_for(taxonomy: Taxonomy) -> Detector:
    """One cached :class:`Detector` per taxonomy object."""
    hit = _DETECTORS.get(id(taxonomy))
    if hit is not None and hit[0] is taxonomy:
        return hit[1]
    if len(_DETECTORS) > 16:
        _DETECTORS.clear()
    d = Detector(taxonomy)
    _DETECTORS[id(taxonomy)] = (taxonomy, d)
    return d


@dataclass
class ExtractInfo:
    """What happened during one extraction (for stage statistics; no raw values)."""

    blocks: int = 0
    parsers: dict[str, int] = field(default_factory=dict)  # "ast" | "lexer" | "error" -> blocks
    literals: int = 0
    excluded: int = 0
    duplicates: int = 0
    tests: int = 0
    errors: list[str] = field(default_factory=list)  # exception class names, never values


def _guess_language(code: str) -> str | None:
    s = code.lstrip()
    if s[:1] in "{[":
        try:
            json.loads(s)
            return "json"
        except ValueError:
            pass
    return None


def _intervals_index(intervals: list[tuple[int, int]]):
    ivs = sorted(set(intervals), key=lambda t: (t[0], -t[1]))
    starts = [s for s, _ in ivs]
    maxend = []
    m = -1
    for _, e in ivs:
        m = max(m, e)
        maxend.append(m)

    def index_of(p: int) -> int:
        j = bisect.bisect_right(starts, p) - 1
        while j >= 0 and maxend[j] > p:
            s, e = ivs[j]
            if s <= p < e:
                return j + 1
            j -= 1
        return 0

    return index_of, len(ivs)


def _marker_regions(text: str, blocks: list[CodeBlock]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    # prose headings: everything outside fenced blocks
    if any(b.fenced for b in blocks):
        prose_marks = []
        pos = 0
        for b in blocks:
            prose_marks += [m.start() for m in _PROSE_MARK.finditer(text, pos, b.start)]
            pos = b.end
        prose_marks += [m.start() for m in _PROSE_MARK.finditer(text, pos)]
        for i, s in enumerate(prose_marks):
            out.append((s, prose_marks[i + 1] if i + 1 < len(prose_marks) else len(text)))
    for b in blocks:
        marks = [b.to_text(m.start()) for m in _COMMENT_MARK.finditer(b.code)]
        for i, s in enumerate(marks):
            out.append((s, marks[i + 1] if i + 1 < len(marks) else b.end))
    return out


def _python_trees(blocks: list[CodeBlock], info: ExtractInfo, context: Iterable[str] = ()
                  ) -> tuple[list, dict[str, list[str]], dict[str, list[str]], dict[str, list[str]]]:
    """Pass 1: a Python tree per block (None when not Python or not parsable) and the
    signatures defined anywhere in the answer, then in the ``context`` texts (the code the
    tests are about), to bind positional arguments; the answer's own definitions win.
    Python definitions come from ``ast``, other languages' from :func:`collect_c_signatures`;
    well-known library calls (:data:`.keys.LIBRARY_SIGNATURES`) come last.
    The fourth dict holds the ``context`` definitions alone (the code under test, for
    :func:`.usekeys.use_keys`)."""
    trees: list = []
    sigs: dict[str, list[str]] = {}
    csigs: dict[str, list[str]] = {}
    tested: dict[str, list[str]] = {}
    for b in blocks:
        t = None
        if b.language in (None, "python") and b.code.strip():
            try:
                t = parse_tree(b.code)
                if t is not None:
                    collect_signatures(t[0], sigs)
            except Exception as e:  # noqa: BLE001 - never raise on model output
                info.errors.append(type(e).__name__)
                t = None
        trees.append(t)
        if t is None and b.language != "python":
            collect_c_signatures(b.code, csigs)
    for ctx in context:
        for b in split_code_blocks(ctx) if isinstance(ctx, str) else ():
            if not b.code.strip():
                continue
            if b.language not in (None, "python"):
                collect_c_signatures(b.code, csigs)
                collect_c_signatures(b.code, tested)
                continue
            try:
                t = parse_tree(b.code)
                if t is not None:
                    collect_signatures(t[0], sigs)
                    collect_signatures(t[0], tested)
                else:
                    collect_c_signatures(b.code, csigs)
                    collect_c_signatures(b.code, tested)
            except Exception as e:  # noqa: BLE001
                info.errors.append(type(e).__name__)
    for name, params in LIBRARY_SIGNATURES.items():
        sigs.setdefault(name, params)
        csigs.setdefault(name, params)
    return trees, sigs, csigs, tested


def _parse_blocks(blocks: list[CodeBlock], attr_for, info: ExtractInfo,
                  context: Iterable[str] = (), text: str = "") -> list[tuple[CodeBlock, str | None, Parsed]]:
    """Pass 2: literals and test intervals per block (``ast`` for Python, else the lexer)."""
    trees, sigs, csigs, tested = _python_trees(blocks, info, context)
    per_block: list[tuple[CodeBlock, str | None, Parsed]] = []
    for b, t in zip(blocks, trees):
        lang = b.language
        parsed = None
        if t is not None:
            lang = "python"
            try:
                parsed = parse_python(b.code, t, sigs, attr_for)
            except Exception as e:  # noqa: BLE001
                info.errors.append(type(e).__name__)
        if parsed is None:
            if lang is None:
                lang = _guess_language(b.code)
            try:
                parsed = lex(b.code, lang, attr_for, sigs=csigs)
            except Exception as e:  # noqa: BLE001
                info.errors.append(type(e).__name__)
                info.parsers["error"] = info.parsers.get("error", 0) + 1
                continue
        info.parsers[parsed.parser] = info.parsers.get(parsed.parser, 0) + 1
        try:
            parsed = Parsed(comment_keys(b.code, parsed.literals, lang, attr_for), parsed.tests, parsed.parser)
            parsed = Parsed(use_keys(b.code, lambda: masked_code(b.code, lang), parsed.literals, attr_for,
                                     CHECKS["identity"], tested), parsed.tests, parsed.parser)
        except Exception as e:  # noqa: BLE001
            info.errors.append(type(e).__name__)
        if b is blocks[-1] and not b.closed and b.end >= len(text.rstrip()):
            try:
                cut = cut_literal(b.code, lang, attr_for, csigs if lang != "python" else None)
                if cut is not None:
                    parsed = Parsed(parsed.literals + [cut], parsed.tests, parsed.parser)
            except Exception as e:  # noqa: BLE001
                info.errors.append(type(e).__name__)
        if lang in (None, "python") and ">>>" in b.code:
            parsed = _with_doctests(b.code, parsed, sigs, attr_for, info)
        parsed = Parsed(parsed.literals + mentions(b.code, attr_for), parsed.tests, parsed.parser)
        per_block.append((b, lang, parsed))
    extra = _prose_doctests(text, blocks, sigs, attr_for, info) + field_lines(text, blocks, attr_for)
    return sorted(per_block + extra, key=lambda t: t[0].start)


def _with_doctests(code: str, parsed: Parsed, sigs, attr_for, info: ExtractInfo) -> Parsed:
    """Doctest sessions read as Python code; the lexer's reading of those lines gives way."""
    try:
        lits, spans = doctest_literals(code, sigs, attr_for)
    except Exception as e:  # noqa: BLE001
        info.errors.append(type(e).__name__)
        return parsed
    if not spans:
        return parsed
    keep = [l for l in parsed.literals if parsed.parser != "lexer" or not any(s <= l.start < e for s, e in spans)]
    return Parsed(keep + lits, parsed.tests, parsed.parser)


def _prose_doctests(text: str, blocks: list[CodeBlock], sigs, attr_for, info: ExtractInfo) -> list:
    """Doctest sessions in the prose between fenced blocks (``.. doctest::``, ``>>>`` lines)."""
    if ">>>" not in text:
        return []
    out = []
    for s, e in prose_spans(text, blocks):
        seg = text[s:e]
        if ">>>" in seg:
            parsed = _with_doctests(seg, Parsed([], [], "doctest"), sigs, attr_for, info)
            if parsed.literals:
                out.append((CodeBlock(seg, "python", start=s, end=e, kind="prose"), "python", parsed))
    return out


_JOIN = re.compile(r"""^["'`]{0,3}\s*(?:\+|\.|\.\.)?\s*["'`]{0,3}$""")
_INSERT = re.compile(r"\binsert\s+(?:ignore\s+)?into\b", re.I)


def join_sql_pieces(code: str, lits: list[Literal]) -> list[Literal]:
    """String pieces joined by ``+`` (``"INSERT INTO t (a) " + "VALUES ('x')"``, Java, JavaScript,
    C#...) or written side by side become one literal when together they are an SQL insert,
    so its values bind to their columns (:mod:`.multivalue`)."""
    lits = sorted(lits, key=lambda l: (l.start, l.end))
    out: list[Literal] = []
    i = 0
    while i < len(lits):
        j, text = i, lits[i].value
        if _INSERT.search(text):
            while j + 1 < len(lits) and len(code[lits[j].end:lits[j + 1].start]) < 40 and \
                    _JOIN.match(code[lits[j].end:lits[j + 1].start]) and "\n\n" not in code[lits[j].end:lits[j + 1].start]:
                j += 1
                text += lits[j].value
        if j > i and "values" in text.lower():
            out.append(Literal(text, lits[i].key, lits[i].start, lits[j].end))
        else:
            out.extend(lits[i:j + 1] if j > i else [lits[i]])
        i = j + 1
    return out


# strings that name something rather than hold a value: an environment variable (os.environ.get(
# "PAYMENT_SECRET_KEY"), os.getenv(...), process.env["..."], System.getenv(...),
# Environment.GetEnvironmentVariable(...)) and a test's title (JUnit @DisplayName("..."), xUnit
# [Fact(DisplayName = "...")], [DisplayName("...")], NUnit [Test(Description = "...")])
_NAME_SLOT = re.compile(
    r"(?:\benviron\s*(?:\.get\s*\(|\[)|\bgetenv\s*\(|\bGetenv\s*\(|\bprocess\.env\s*\[|"
    r"\b[Gg]etEnvironmentVariable\s*\(|\bENV\s*(?:\[|\.fetch\s*\()|\benv::var\s*\(|"
    r"@DisplayName\s*\(|\[\s*(?:DisplayName|Description)\s*\(|"
    r"\[\s*(?:Fact|Theory|Test|TestMethod|TestCase)\s*\([^\]\n]*?\b(?:DisplayName|Description|TestName)\s*=)\s*[\"'`]?$")


def name_slot(code: str, lit: Literal) -> bool:
    """``lit`` is the name an environment lookup is given or a test's title (:data:`_NAME_SLOT`)."""
    return bool(_NAME_SLOT.search(code, max(0, lit.start - 120), lit.start))


def _candidates(text: str, per_block, det: Detector, excl: str, index_of, info: ExtractInfo) -> list[dict]:
    """Classify every literal; drop values from the prompt and repeated (value, attribute)."""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    seen: set[tuple[str, str]] = set()
    out: list[dict] = []
    for b, lang, parsed in per_block:
        lits: list[Literal] = []
        for lit in join_sql_pieces(b.code, sql_statements(b.code, parsed.literals)):
            try:
                lits += split_values(lit) or [lit]
            except Exception as e:  # noqa: BLE001 - never raise on model output
                info.errors.append(type(e).__name__)
                lits.append(lit)
        info.literals += len(lits)
        for lit in map(trimmed, lits):
            if name_slot(b.code, lit):
                continue
            derived = lit.key == TRANSFORMED_KEY
            try:
                sub = None if derived else classify_embedded(det, lit)
                lit, hit = sub if sub else (lit, det.classify_detailed(lit.value, None if derived else lit.key))
            except Exception as e:  # noqa: BLE001
                info.errors.append(type(e).__name__)
                continue
            if hit is None or (derived and hit[1] in ("entropy", "hex64")):
                continue  # a digest compared with hash_password(p) is no secret by its randomness
            attr, pattern, validity = hit
            if excl and lit.value in excl:
                info.excluded += 1
                continue
            if (lit.value, attr) in seen:
                info.duplicates += 1
                continue
            seen.add((lit.value, attr))
            s, e = b.to_text(lit.start), b.to_text(lit.end)
            out.append({
                "value": lit.value,
                "attribute": attr,
                "evidence": {"key": lit.key, "pattern": pattern, "span": [s, e],
                             "line": bisect.bisect_right(line_starts, s)},
                "language": lang,
                "test_index": index_of(s),
                "validity": dict(validity, cut=True) if lit.cut else validity,
            })
    return out


def extract_detailed(text: str, taxonomy: Taxonomy, *, language: str | None = None,
                     exclude: Iterable[str] = (), context: Iterable[str] = ()) -> tuple[list[dict], ExtractInfo]:
    """Like :func:`extract`, also returning an :class:`ExtractInfo`."""
    info = ExtractInfo()
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    det = detector_for(taxonomy)
    excl = "\n\x00".join(e for e in exclude if isinstance(e, str) and e)
    blocks = split_code_blocks(text, language)
    info.blocks = len(blocks)
    per_block = _parse_blocks(blocks, det.attribute_for_key, info, context, text)
    intervals = [(b.to_text(s), b.to_text(e)) for b, _, parsed in per_block for s, e in parsed.tests]
    intervals += _marker_regions(text, blocks)
    index_of, info.tests = _intervals_index(intervals)
    return _candidates(text, per_block, det, excl, index_of, info), info


def extract(text: str, taxonomy: Taxonomy, *, language: str | None = None,
            exclude: Iterable[str] = (), context: Iterable[str] = ()) -> list[dict]:
    """ExtractPII: candidate dicts ``{value, attribute, evidence{key, pattern, span, line},
    language, test_index}`` in document order (see the module docstring). ``context``:
    texts whose Python definitions name the positional arguments of calls in ``text``
    (the code under test, which the test answer calls but does not define); their literals
    are not read."""
    return extract_detailed(text, taxonomy, language=language, exclude=exclude, context=context)[0]


# --- records in, records out (the ``candidates`` stage) ---------------------------------

def response_text(rec: dict) -> str | None:
    """The text to read: ``turn2.text`` (ours: the test answer), else ``tests_text``
    (baselines: prompt + continuation, so the key the prompt opened is seen), else
    ``turn1.text``, ``text`` or ``completion``."""
    t2 = rec.get("turn2")
    if isinstance(t2, dict) and isinstance(t2.get("text"), str):
        return t2["text"]
    if isinstance(rec.get("tests_text"), str) and rec["tests_text"]:
        return rec["tests_text"]
    t1 = rec.get("turn1")
    if isinstance(t1, dict) and isinstance(t1.get("text"), str):
        return t1["text"]
    for k in ("text", "completion"):
        v = rec.get(k)
        if isinstance(v, str):
            return v
        if isinstance(v, dict) and isinstance(v.get("text"), str):
            return v["text"]
    return None


def prompt_texts(rec: dict) -> list[str]:
    """Texts the model was given (system/user messages of every turn, ``prompt``)."""
    out: list[str] = []
    for turn in ("turn1", "turn2"):
        t = rec.get(turn)
        msgs = t.get("messages") if isinstance(t, dict) else None
        for m in msgs or []:
            if isinstance(m, dict) and m.get("role") in ("system", "user") and isinstance(m.get("content"), str):
                out.append(m["content"])
    for m in rec.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in ("system", "user") and isinstance(m.get("content"), str):
            out.append(m["content"])
    for k in ("prompt", "prompt_text"):
        if isinstance(rec.get(k), str) and rec[k]:
            out.append(rec[k])
    return out


def code_context(rec: dict) -> list[str]:
    """The code the test answer is about: the code turn's answer (when the record has a
    test turn) and the selected functions' sources."""
    out: list[str] = []
    t1, t2 = rec.get("turn1"), rec.get("turn2")
    if isinstance(t2, dict) and isinstance(t1, dict) and isinstance(t1.get("text"), str):
        out.append(t1["text"])
    for f in rec.get("functions") or []:
        if isinstance(f, dict) and isinstance(f.get("source"), str):
            out.append(f["source"])
    return out


_CARRY = ("question_id", "prompt_id", "method", "variant", "model", "round")


def candidates_from_responses(responses: Iterable[dict], taxonomy: Taxonomy) -> tuple[list[dict], dict]:
    """Candidate records for response records, and counts for metrics (no raw values).

    Responses whose ``status`` is not ``ok`` and responses without text are skipped and
    counted under ``skipped`` by reason. Candidate ids are ``<response_id>:<n>``.
    """
    cands: list[dict] = []
    stats: dict = {"responses": 0, "with_candidates": 0, "candidates": 0, "skipped": {},
                   "by_attribute": {}, "by_pattern": {}, "parsers": {}, "excluded": 0, "off_shape": 0,
                   "duplicates": 0, "errors": {}}

    def bump(d: dict, k: str, n: int = 1):
        d[k] = d.get(k, 0) + n

    for r in responses:
        stats["responses"] += 1
        status = r.get("status", "ok")
        if status != "ok":
            bump(stats["skipped"], str(status))
            continue
        text = response_text(r)
        if text is None:
            bump(stats["skipped"], "no_text")
            continue
        lang = r.get("lang") if isinstance(r.get("lang"), str) else None
        fns = r.get("functions")
        if isinstance(fns, list) and fns and isinstance(fns[0], dict):
            lang = fns[0].get("language") or lang
        found, info = extract_detailed(text, taxonomy, language=lang, exclude=prompt_texts(r),
                                       context=code_context(r))
        for k, n in info.parsers.items():
            bump(stats["parsers"], k, n)
        for e in info.errors:
            bump(stats["errors"], e)
        stats["excluded"] += info.excluded
        stats["duplicates"] += info.duplicates
        if found:
            stats["with_candidates"] += 1
        rid = r.get("id")
        for n, c in enumerate(found):
            rec = {"id": f"{rid}:{n}", "response_id": rid}
            rec.update({k: r[k] for k in _CARRY if k in r})
            rec.update({"test_index": c["test_index"], "attribute": c["attribute"], "value": c["value"],
                        "value_hash": value_hash(c["value"]), "evidence": c["evidence"],
                        "language": c["language"], "validity": c["validity"]})
            cands.append(rec)
            bump(stats["by_attribute"], c["attribute"])
            bump(stats["by_pattern"], c["evidence"]["pattern"].split(":")[0])
            if not c["validity"]["ok"]:
                stats["off_shape"] += 1
    stats["candidates"] = len(cands)
    return cands, stats
