"""`testleak privacy-check`: raw candidate values of the runs under data/, and the raw values of
hand labels under data/labels/ (:func:`label_values`), found in git-tracked files.

Every candidate value of ``data/**/candidates.jsonl`` of at least ``min_length`` characters (6) is
looked for in every ``git ls-files`` file as a whole-token substring (:func:`is_whole_token`, so a
6-digit value inside a sha256 is no hit). Each hit is printed masked with file, line, runs, record
status and whether it is an echo (:mod:`testleak.echo`), a placeholder, ``common`` (more corpus hits
than ``verifier.window.max``, default 100: public by the paper's Sec. 4.3) or ``generic`` (a taxonomy
word, which the candidates stage withholds). Exit status: 0 when every hit is one of those, 1 when
any other value is in a tracked file (a possible leak: remove it, or make a generic one a
placeholder with ``testleak placeholders add``), 2 on an error. A value is an echo when any of its
records is one: the project's own prompts hold it.
"""

from __future__ import annotations

import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .errors import ConfigError, TestleakError
from .metrics.steps import judged_outcome
from .privacy import mask
from .extract.core import prompt_texts
from .records import iter_jsonl, rules_status
from .verify.rules import generic_reason, placeholder_reason

DEFAULT_MIN_LENGTH = 6


@dataclass
class ValueInfo:
    """Every record of one raw value under data/ (no value is ever printed unmasked);
    ``window_max``: the verifier window's upper bound (``verifier.window.max``)."""

    window_max: int
    runs: set[str] = field(default_factory=set)
    statuses: set[str] = field(default_factory=set)
    echo_of: set[str] = field(default_factory=set)
    placeholder: str | None = None
    generic: bool = False           # a word of the taxonomy (attribute key, display name, lexicon entry)
    records: int = 0
    min_hits: int | None = None     # fewest corpus hits over the value's searched records

    @property
    def kind(self) -> str:
        """``echo`` | ``generic`` | ``placeholder`` | ``common`` | ``leak`` (none of them: the check fails)."""
        if self.echo_of:
            return "echo"
        if self.generic:
            return "generic"
        if self.placeholder:
            return "placeholder"
        if self.min_hits is not None and self.min_hits > self.window_max:
            return "common"
        return "leak"


@dataclass
class Hit:
    file: str
    line: int
    count: int
    value: str
    info: ValueInfo

    def format(self) -> str:
        i = self.info
        return (f"{self.file}:{self.line}: {mask(self.value)} ({self.count}x) kind={i.kind} "
                f"status={','.join(sorted(i.statuses))} runs={','.join(sorted(i.runs))} "
                f"echo={','.join(sorted(i.echo_of)) or 'no'} placeholder={i.placeholder or 'no'}"
                f"{'' if i.min_hits is None else f' corpus_hits>={i.min_hits}'}")


def _run_name(cand_file: Path, data: Path) -> str:
    rel = cand_file.parent.relative_to(data)
    return "/".join(rel.parts[1:] if rel.parts[:1] == ("runs",) else rel.parts) or str(rel)


def candidate_values(data_dir: str | Path, min_length: int = DEFAULT_MIN_LENGTH, *, window_max: int,
                     taxonomy=None) -> dict[str, ValueInfo]:
    """Raw values (>= ``min_length`` characters) of every candidate record under ``data_dir``,
    with their runs, statuses, echo sources, placeholder reason and fewest corpus hits
    (``k`` of the run's verified.jsonl; ``window_max``: the verifier window's upper bound), and
    whether it is a word of ``taxonomy`` (:func:`testleak.verify.rules.generic_reason`). Records
    that withheld their value (``withheld``: only hash and mask kept) hold none to look for."""
    data = Path(data_dir)
    out: dict[str, ValueInfo] = defaultdict(lambda: ValueInfo(window_max=window_max))
    for cf in sorted(data.rglob("candidates.jsonl")):
        run = _run_name(cf, data)
        verdicts = {v["candidate_id"]: v for v in iter_jsonl(cf.with_name("judged.jsonl"), "verdict")} \
            if cf.with_name("judged.jsonl").exists() else {}
        final = {c["candidate_id"]: c for c in iter_jsonl(cf.with_name("confirmed.jsonl"), "confirmed")} \
            if cf.with_name("confirmed.jsonl").exists() else {}
        hits = {h["candidate_id"]: h.get("k") for h in iter_jsonl(cf.with_name("verified.jsonl"), "hit")} \
            if cf.with_name("verified.jsonl").exists() else {}
        for c in iter_jsonl(cf, "candidate"):
            value = c.get("value")
            if not isinstance(value, str) or len(value) < min_length:
                continue
            info = out[value]
            info.records += 1
            info.runs.add(run)
            v = verdicts.get(c["id"])
            if c["id"] in final:
                info.statuses.add(str(final[c["id"]].get("status")))
            elif v is not None:
                info.statuses.add(judged_outcome(v))
            else:
                info.statuses.add("candidate")
            if c.get("echo_of"):
                info.echo_of.add(str(c["echo_of"]))
            if taxonomy is not None and not info.generic:
                info.generic = generic_reason(value, taxonomy) is not None
            k = hits.get(c["id"])
            if isinstance(k, int):
                info.min_hits = k if info.min_hits is None else min(info.min_hits, k)
            if info.placeholder is None:
                if v is not None and rules_status(v.get("rules") or {}) == "placeholder":
                    info.placeholder = "rules status placeholder"
                else:
                    why = placeholder_reason(value)
                    info.placeholder = why
    return dict(out)


def _responses_near(label_file: Path, stop: Path) -> dict[str, dict]:
    """The responses (by id) of the nearest ``responses.jsonl`` at or above ``label_file``'s
    directory, up to ``stop``: the answers a set of hand labels was made from."""
    d = label_file.parent
    while True:
        f = d / "responses.jsonl"
        if f.is_file():
            return {r["id"]: r for r in iter_jsonl(f) if isinstance(r, dict) and "id" in r}
        if d == stop or stop not in d.parents:
            return {}
        d = d.parent


# the project's own prompt material, which every baseline prompt and library hint is drawn from
PROMPT_RESOURCES = ("codexleaks.yaml", "codebreaker.yaml", "prior_library.yaml")


def project_prompts(root: str | Path) -> str:
    """The text of the shipped prompt resources (:data:`PROMPT_RESOURCES`) of the project at ``root``."""
    res = Path(root) / "testleak" / "resources"
    return "\n".join((res / f).read_text(encoding="utf-8") for f in PROMPT_RESOURCES if (res / f).is_file())


def label_values(labels_dir: str | Path, min_length: int = DEFAULT_MIN_LENGTH, *, window_max: int,
                 taxonomy=None, prompts: str = "") -> dict[str, ValueInfo]:
    """Raw values (>= ``min_length`` characters) of the hand labels under ``labels_dir``
    (``data/labels/``: lines with a ``response_id`` and a raw ``value``, as annotators write
    them): an echo when the prompt of its response (the nearest responses.jsonl) or ``prompts``
    (the project's prompt resources, :func:`project_prompts`) holds it, a
    placeholder when its labeller said so or :func:`placeholder_reason` does, generic as for
    candidates; their run is the label file's directory."""
    base = Path(labels_dir)
    out: dict[str, ValueInfo] = defaultdict(lambda: ValueInfo(window_max=window_max))
    for lf in sorted(base.rglob("*.jsonl")):
        if lf.name == "responses.jsonl":
            continue
        rows = [r for r in iter_jsonl(lf) if isinstance(r, dict) and isinstance(r.get("value"), str)
                and "response_id" in r and len(r["value"]) >= min_length]
        if not rows:
            continue
        responses = _responses_near(lf, base)
        where = "labels/" + lf.parent.relative_to(base).as_posix()
        for r in rows:
            value = r["value"]
            info = out[value]
            info.records += 1
            info.runs.add(where)
            info.statuses.add("hand label")
            rec = responses.get(r["response_id"])
            if rec is not None and any(value in t for t in prompt_texts(rec)):
                info.echo_of.add("prompt")
            elif prompts and value in prompts:
                info.echo_of.add("prompt resource")
            if taxonomy is not None and not info.generic:
                info.generic = generic_reason(value, taxonomy) is not None
            if info.placeholder is None:
                info.placeholder = "labelled placeholder" if r.get("placeholder") is True else placeholder_reason(value)
    return dict(out)


def _merge(a: dict[str, ValueInfo], b: dict[str, ValueInfo]) -> dict[str, ValueInfo]:
    """Both value tables in one: a value in both keeps every run, status and source of each."""
    out = dict(a)
    for v, i in b.items():
        if v not in out:
            out[v] = i
            continue
        m = out[v]
        m.runs |= i.runs
        m.statuses |= i.statuses
        m.echo_of |= i.echo_of
        m.placeholder = m.placeholder or i.placeholder
        m.generic = m.generic or i.generic
        m.records += i.records
        if i.min_hits is not None:
            m.min_hits = i.min_hits if m.min_hits is None else min(m.min_hits, i.min_hits)
    return out


def tracked_files(root: str | Path) -> list[str]:
    """``git ls-files`` of ``root`` (relative paths), or a ConfigError when it is no git work tree."""
    try:
        p = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", b"") or b""
        raise ConfigError(f"{root} is not a git work tree (git ls-files failed: "
                          f"{err.decode(errors='replace').strip() or e})") from None
    return [f for f in p.stdout.decode("utf-8", "surrogateescape").split("\0") if f]


def is_whole_token(text: str, i: int, value: str) -> bool:
    """Whether ``value``, found at ``text[i:]``, stands as a token of its own: no letter or digit
    joins its first (last) character from before (after) when that character is one. A value
    that begins or ends with punctuation (``@x.com``) is bounded there by itself.

    >>> is_whole_token("pin 123456 ok", 4, "123456"), is_whole_token("sha256:ab123456cd", 9, "123456")
    (True, False)
    """
    j = i + len(value)
    before = text[i - 1] if i > 0 else ""
    after = text[j] if j < len(text) else ""
    return not ((value[0].isalnum() and before.isalnum()) or (value[-1].isalnum() and after.isalnum()))


def find_hits(root: str | Path, values: dict[str, ValueInfo], files: Iterable[str]) -> list[Hit]:
    """Every (file, value) pair where the value occurs in the file as a whole token
    (:func:`is_whole_token`), with its first line and count. One pass per file: positions are
    looked up by the values' first characters."""
    if not values:
        return []
    k = min(len(v) for v in values)
    by_prefix: dict[str, list[str]] = defaultdict(list)
    for v in values:
        by_prefix[v[:k]].append(v)
    hits: list[Hit] = []
    base = Path(root)
    for f in files:
        p = base / f
        if not p.is_file():
            continue
        text = p.read_bytes().decode("utf-8", "replace")
        found: dict[str, list[int]] = {}
        for i in range(len(text) - k + 1):
            cands = by_prefix.get(text[i:i + k])
            if cands:
                for v in cands:
                    if text.startswith(v, i) and is_whole_token(text, i, v):
                        found.setdefault(v, []).append(i)
        for v, pos in found.items():
            hits.append(Hit(f, text.count("\n", 0, pos[0]) + 1, len(pos), v, values[v]))
    return hits


def _project_config(root: Path) -> tuple[int, "Taxonomy | None"]:
    """``verifier.window.max`` and the taxonomy of the project's params.yaml, each typed
    (:func:`testleak.config.typed`); a project without a usable one: the window of the default
    composition of conf/ and no taxonomy (no generic words)."""
    import yaml

    from .config import compose_dict, typed
    from .taxonomy import Taxonomy

    try:
        params = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        params = {}
    params = params if isinstance(params, dict) else {}
    try:
        window_max = typed(params, "verifier.window").max
    except ConfigError:
        window_max = typed(compose_dict(check_files=False), "verifier.window").max
    try:
        taxonomy = Taxonomy.from_config(params, root) if params.get("taxonomy") else None
    except (OSError, KeyError, TypeError, ValueError, TestleakError):   # no usable taxonomy: no generic words
        taxonomy = None
    return window_max, taxonomy


def privacy_check(root: str | Path = ".", min_length: int = DEFAULT_MIN_LENGTH, out=print) -> int:
    """Run the check over the project at ``root`` (its data/ and git-tracked files); print the
    hits and a summary with ``out``; return the exit status (module docstring)."""
    if min_length < 1:
        raise ConfigError(f"--min-length {min_length}: expected an integer >= 1")
    root = Path(root)
    files = tracked_files(root)
    data = root / "data"
    window_max, taxonomy = _project_config(root)
    values = candidate_values(data, min_length, window_max=window_max, taxonomy=taxonomy) if data.is_dir() else {}
    labels = data / "labels"
    if labels.is_dir():
        values = _merge(values, label_values(labels, min_length, window_max=window_max, taxonomy=taxonomy,
                                             prompts=project_prompts(root)))
    hits = find_hits(root, values, files)
    for h in sorted(hits, key=lambda h: (h.info.kind != "leak", h.file, h.line)):
        out(h.format())
    kinds = defaultdict(set)
    for h in hits:
        kinds[h.info.kind].add(h.value)
    runs = sorted({r for i in values.values() for r in i.runs})
    out(f"privacy-check: {len(values)} candidate and hand-label values of >= {min_length} characters from {len(runs)} runs "
        f"and label sets under "
        f"{data}, {len(files)} tracked files: {len(hits)} hits of {sum(len(s) for s in kinds.values())} values "
        f"(echo {len(kinds['echo'])}, generic {len(kinds['generic'])}, placeholder {len(kinds['placeholder'])}, common {len(kinds['common'])}, "
        f"none of these {len(kinds['leak'])})")
    if kinds["leak"]:
        out(f"privacy-check: FAILED: {len(kinds['leak'])} candidate or hand-label values that are neither an echo of a prompt, a "
            f"placeholder nor common in the corpus occur in tracked files (kind=leak above): remove them from those files, or, if a value is "
            f"generic, add it to the placeholder list (`testleak placeholders add`)")
        return 1
    return 0


__all__ = ["DEFAULT_MIN_LENGTH", "Hit", "ValueInfo", "candidate_values", "find_hits", "is_whole_token", "label_values",
           "privacy_check", "project_prompts", "tracked_files"]
