"""Canary corpus: plant known synthetic private values into real code (beyond the paper).

A corpus search only confirms the leaks it happens to find; with planted canaries the ground truth
is known, so misses can be counted. N seeded canary values (the paper's 15 attributes round-robin)
go into a seeded sample of real Python files (installed distributions, as the local index), each in
a context of :mod:`.contexts` with a key from the attribute's lexicon, the kinds in turn; a user
canary (``canary.spec``) keeps its own context. Values are unique and absent from the untouched
files and, when given, from the corpus index (a collision draws the next value). Every snippet
parses and holds its value once; a planted file that no longer parses gets the snippet at its end.
Pure functions: files in, (planted files, ground-truth records) out.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ..errors import ConfigError
from ..privacy import value_hash
from .contexts import KINDS, classify, draw_key, fill, template
from .values import ATTRIBUTES, make_value


@dataclass(frozen=True)
class SourceFile:
    repo: str
    path: str
    text: str


def sample_files(files: Iterable, n: int, seed: int, min_bytes: int, max_bytes: int) -> list[SourceFile]:
    """A seeded sample of ``n`` parseable Python files with size in [min_bytes, max_bytes]
    (``canary.file_bytes``).

    ``files`` yields objects with ``repo``, ``path`` and ``abspath`` (``testleak.verify.index.CorpusFile``).
    """
    pool = []
    for f in files:
        try:
            size = Path(f.abspath).stat().st_size
        except OSError:
            continue
        if min_bytes <= size <= max_bytes and "test" not in Path(f.path).name:
            pool.append(f)
    rng = random.Random(seed)
    rng.shuffle(pool)
    out: list[SourceFile] = []
    for f in pool:
        if len(out) >= n:
            break
        try:
            text = Path(f.abspath).read_text(encoding="utf-8")
            ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        out.append(SourceFile(f.repo, f.path, text))
    if len(out) < n:
        raise ConfigError(f"only {len(out)} usable corpus files for canary.files={n}: lower canary.files "
                          f"or widen canary.file_bytes")
    return out


def insert_snippet(text: str, code: str, rng: random.Random) -> tuple[str, int]:
    """Insert ``code`` at a top-level blank line of ``text`` (seeded choice) or at the end.

    Returns (new text, 1-based line number of the snippet's first line)."""
    lines = text.splitlines(keepends=True)
    spots = [i for i in range(1, len(lines) - 1)
             if not lines[i].strip() and lines[i + 1][:1].isalpha()
             and not lines[i + 1].startswith(("import", "from", "else", "elif", "except", "finally"))]
    rng.shuffle(spots)
    for i in spots[:5]:
        new = "".join(lines[: i + 1]) + code + "\n" + "".join(lines[i + 1:])
        try:
            ast.parse(new)
        except SyntaxError:
            continue
        return new, i + 2
    sep = "" if text.endswith("\n") else "\n"
    return text + sep + "\n" + code, len(lines) + 2


def duplication_of(i: int, n_attributes: int, levels: Sequence[int]) -> int:
    """Copies of the i-th Faker canary: attributes go round-robin, and each full round of the
    attributes takes the next level, so every attribute appears at every level once
    ``n >= n_attributes x len(levels)`` (canaries 0-14 at levels[0], 15-29 at levels[1], ...)."""
    return int(levels[(i // max(1, n_attributes)) % len(levels)])


def plant(files: Sequence[SourceFile], taxonomy_attributes: Mapping[str, Mapping], scenarios: Mapping[str, Mapping],
          n: int, seed: int, absent: Callable[[str], bool] | None = None,
          attributes: Sequence[str] | None = None, duplication: Sequence[int] = (1,),
          spec: Sequence[Mapping] | None = None, spec_path: str = "canary.spec") -> tuple[dict[tuple[str, str], str], list[dict]]:
    """Plant ``n`` canaries into ``files`` (round-robin over attributes), each ``k`` times.

    ``taxonomy_attributes``: attribute -> {lexicon: [...]} (``taxonomy.attributes``);
    ``scenarios``: scenario -> {attributes: [...], title}; ``absent(value)`` is an extra
    absence check (e.g. a corpus index); Faker values found in the untouched files or by
    ``absent`` are redrawn. ``duplication``: the levels k (:func:`duplication_of`). Copies are
    the identical snippet, spread over the files in turn (distinct files while k <= files).
    ``spec``: user canaries (:func:`testleak.canary.spec.read_spec`) replace Faker's (``n`` and
    ``attributes`` are then unused); a spec value present in the untouched files or not
    ``absent`` is an error (one line per such spec line), never redrawn.
    Returns ({(repo, path): planted text}, ground-truth records).
    """
    levels = _duplication_levels(duplication)
    if not files:
        raise ConfigError("canary.files must be >= 1")
    rng = random.Random(seed)
    texts = {(f.repo, f.path): f.text for f in files}
    originals = [f.text for f in files]
    if spec is not None:
        drafts = _spec_drafts(spec, originals, absent, levels, spec_path)
    else:
        drafts = _faker_drafts(taxonomy_attributes, attributes, n, seed, originals, absent, levels)
    truth = _place_drafts(drafts, files, texts, taxonomy_attributes, scenarios, rng)
    _locate_copies(truth, texts)
    return texts, truth


def _duplication_levels(duplication: Sequence[int]) -> list[int]:
    """``canary.duplication`` as integers, each >= 1 (at least one level)."""
    levels = [int(k) for k in duplication]
    if not levels or any(k < 1 for k in levels):
        raise ConfigError(f"canary.duplication={list(duplication)}: expected a non-empty list of integers >= 1")
    return levels


def _spec_drafts(spec: Sequence[Mapping], originals: Sequence[str], absent: Callable[[str], bool] | None,
                 levels: Sequence[int], spec_path: str) -> list[dict]:
    """Drafts of the user canaries, after checking that no spec value is already in the corpus:
    a value there cannot be redrawn, so it is an error naming its spec line."""
    problems = []
    for e in spec:
        if any(e["value"] in t for t in originals):
            problems.append(f"{spec_path}:{e['line']}: value already occurs in the untouched sampled corpus files; "
                            f"expected a value absent from the corpus (a recovery must come from the planted copy)")
        elif absent is not None and not absent(e["value"]):
            problems.append(f"{spec_path}:{e['line']}: value already occurs in the corpus index; expected a value "
                            f"absent from the corpus")
    if problems:
        from .spec import spec_error
        raise spec_error(problems)
    return [{"attribute": e["attribute"], "value": e["value"], "source": "spec", "spec_line": e["line"],
             "spec_where": f"{spec_path}:{e['line']}",
             "user_context": e.get("context"), "seed": None, "draws": 1,
             "duplication": int(e.get("duplication") or levels[i % len(levels)])} for i, e in enumerate(spec)]


def _faker_drafts(taxonomy_attributes: Mapping[str, Mapping], attributes: Sequence[str] | None, n: int, seed: int,
                  originals: Sequence[str], absent: Callable[[str], bool] | None, levels: Sequence[int]) -> list[dict]:
    """Drafts of ``n`` Faker canaries, round-robin over ``attributes`` (default: all), each value
    unique and absent from the corpus."""
    attrs = list(attributes or ATTRIBUTES)
    unknown = [a for a in attrs if a not in taxonomy_attributes]
    if unknown:
        raise ConfigError(f"canary attributes {unknown} are not in the taxonomy; known: {', '.join(taxonomy_attributes)}")
    if n < 1:
        raise ConfigError("canary.n must be >= 1")
    seen: set[str] = set()
    drafts = []
    for i in range(n):
        attr = attrs[i % len(attrs)]
        vseed = seed * 1000 + i
        value, draws = _draw_value(attr, vseed, seen, originals, absent)
        seen.add(value)
        drafts.append({"attribute": attr, "value": value, "source": "faker", "seed": vseed, "draws": draws,
                       "user_context": None, "duplication": duplication_of(i, len(attrs), levels)})
    return drafts


def _draw_value(attr: str, vseed: int, seen: set[str], originals: Sequence[str],
                absent: Callable[[str], bool] | None) -> tuple[str, int]:
    """(value, draws): the first of up to 50 seeded values of ``attr`` that is new (not in
    ``seen``) and absent from the untouched files and from ``absent``."""
    for attempt in range(50):
        value = make_value(attr, vseed + attempt * 7919)
        if value in seen or any(value in t for t in originals) or (absent is not None and not absent(value)):
            continue
        return value, attempt + 1
    raise ConfigError(f"could not draw a unique, absent value for attribute {attr!r} in 50 attempts")


def _place_drafts(drafts: Sequence[Mapping], files: Sequence[SourceFile], texts: dict[tuple[str, str], str],
                  taxonomy_attributes: Mapping[str, Mapping], scenarios: Mapping[str, Mapping],
                  rng: random.Random) -> list[dict]:
    """The ground-truth records: each draft gets a scenario and its snippet (:func:`_snippet`),
    inserted ``duplication`` times into ``texts`` (updated in place), the files taken in turn."""
    truth: list[dict] = []
    slot = 0
    for i, d in enumerate(drafts):
        attr, value = d["attribute"], d["value"]
        lex = list(taxonomy_attributes[attr].get("lexicon") or [attr])
        scen = [s for s, sc in scenarios.items() if attr in (sc.get("attributes") or [])]
        scenario = rng.choice(sorted(scen)) if scen else "generic"
        title = (scenarios.get(scenario) or {}).get("title") or scenario
        kind, key, code, line_prefix = _snippet(d, KINDS[i % len(KINDS)], lex, scenario, title, rng)
        placed = _insert_copies(texts, files, slot, d["duplication"], code, rng)
        slot += d["duplication"]
        rec = {"id": f"canary-{i:03d}", "attribute": attr, "value": value, "value_hash": value_hash(value),
               "source": d["source"], "duplication": d["duplication"], "key": key, "scenario": scenario,
               "context_kind": kind, "context_source": "spec" if d["user_context"] is not None else "builtin",
               "context": code, "line_prefix": line_prefix,
               "repo": placed[0].split("/", 1)[0], "file": placed[0], "line": 0, "copies": placed,
               "seed": d["seed"], "draws": d["draws"]}
        if d["source"] == "spec":
            rec["spec_line"] = d["spec_line"]
        truth.append(rec)
    return truth


def _snippet(draft: Mapping, kind: str, lexicon: Sequence[str], scenario: str, title: str,
             rng: random.Random) -> tuple[str, str | None, str, str]:
    """(context kind, key, code, line prefix) of one canary: a user context as given (its kind
    classified, no key), else the built-in ``kind`` with a key of the attribute's whole ``lexicon``."""
    value = draft["value"]
    if draft["user_context"] is not None:
        try:
            code, line_prefix = fill(draft["user_context"], value)
        except ConfigError as e:
            from .spec import spec_error
            raise spec_error([f"{draft['spec_where']}: {e}"]) from None
        return classify(code, value), None, code, line_prefix
    key = draw_key(lexicon, kind, rng)
    code, line_prefix = fill(template(kind, key, scenario, title, rng), value)
    return kind, key, code, line_prefix


def _insert_copies(texts: dict[tuple[str, str], str], files: Sequence[SourceFile], slot: int, k: int, code: str,
                   rng: random.Random) -> list[str]:
    """Insert ``k`` copies of ``code`` into the files from position ``slot`` on (cycling); returns
    the ``repo/path`` of each copy."""
    placed = []
    for j in range(k):
        f = files[(slot + j) % len(files)]
        texts[(f.repo, f.path)], _line = insert_snippet(texts[(f.repo, f.path)], code, rng)
        placed.append(f"{f.repo}/{f.path}")
    return placed


def _locate_copies(truth: Sequence[dict], texts: Mapping[tuple[str, str], str]) -> None:
    """Set every record's copies, file and line from the final texts: line numbers shift when a later
    snippet goes above an earlier one in the same file, so every copy is located at the end (the
    k-th copy in a file is the k-th occurrence of the snippet there)."""
    for t in truth:
        lines = []
        for f in sorted(set(t["copies"])):
            text = texts[tuple(f.split("/", 1))]
            pos, found = text.find(t["context"]), []
            while pos >= 0:
                found.append({"file": f, "line": text.count("\n", 0, pos) + 1})
                pos = text.find(t["context"], pos + 1)
            if len(found) != t["copies"].count(f):  # pragma: no cover - a snippet overlapping another
                raise ConfigError(f"canary {t['id']}: {len(found)} copies found in {f}, "
                                  f"{t['copies'].count(f)} planted; rerun with another canary.seed")
            lines += found
        t["copies"] = lines
        t["file"], t["line"] = lines[0]["file"], lines[0]["line"]
        t["repo"] = t["file"].split("/", 1)[0]


def write_corpus(texts: Mapping[tuple[str, str], str], out_dir: str | Path) -> int:
    """Write planted files as ``out_dir/<repo>/<path>`` (the index's ``dirs`` layout)."""
    out = Path(out_dir)
    n = 0
    for (repo, path), text in sorted(texts.items()):
        p = out / repo / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        n += 1
    return n
