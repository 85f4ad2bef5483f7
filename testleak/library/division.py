"""Template / fragment division of leaked instances by token pseudo-NLL (paper Sec. 5.2, Fig. 3).

Each token of a leaked instance is scored by a code model independent of the model under test,
l_i = -log P(t_i | context); tokens at or below the instance's lower quartile (``quantile``) are
*template*, maximal runs of the others are *fragments*, replaced by the slot symbol in the template.
Scorers (``library.division.scorer``): ``mlm_pll`` (the paper's masked-LM pseudo-likelihood; needs a
CodeBERT-style model, none installs offline), ``causal_surprisal`` (default: a GGUF scorer of
``models_file``, Gemma 3 270M chosen by measurement, another family than the models under test;
scored after the preceding source lines, since with left context only a line's first identifier is
always surprising) and ``fim_pll`` (fill-in-the-middle, Qwen scorer only, n times dearer).
``value_span: anchor`` (default) takes the verifier's value span as the fragment region and splits
only inside it: on one short line the pure rule (``score``) yields templates like
``<EMAIL>.email <EMAIL>``, since key names are often more surprising than values. Quotes and
whitespace around a fragment stay in the template.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConfigError, DataError
from ..settings import Division as DivisionSettings

SCORERS = ("causal_surprisal", "fim_pll", "mlm_pll")
VALUE_SPAN_POLICIES = ("anchor", "score")
_TRIM = " \t\r\n\"'`"


@dataclass
class TokenScores:
    """Scores of the tokens of one text: ``spans[i]`` = (start, end) characters, ``scores[i]`` = l_i."""

    text: str
    spans: list[tuple[int, int]]
    scores: list[float]
    rows: int = 0  # forward rows spent on this text (one per token for PLL scorers)


# ----------------------------------------------------------------------------- scorers
class Scorer(ABC):
    name: str = "?"

    @abstractmethod
    def score(self, texts: Sequence[str], prefixes: Sequence[str] | None = None) -> list[TokenScores]:
        """Score every token of every text; ``prefixes[k]`` (optional) is left context that is
        fed to the model but not scored."""


def _encode(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offs = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    return ids, offs


def _batched_target_nll(model, rows: list[list[int]], positions: list[int], targets: list[int],
                        pad_id: int, batch_size: int) -> list[float]:
    """-log softmax(logits[row, pos])[target] for each row; rows are right-padded per batch."""
    import torch

    out = [math.nan] * len(rows)
    order = sorted(range(len(rows)), key=lambda r: len(rows[r]))
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            width = max(len(rows[r]) for r in idx)
            x = torch.full((len(idx), width), pad_id, dtype=torch.long)
            am = torch.zeros((len(idx), width), dtype=torch.long)
            for j, r in enumerate(idx):
                x[j, :len(rows[r])] = torch.tensor(rows[r])
                am[j, :len(rows[r])] = 1
            logits = model(input_ids=x, attention_mask=am).logits
            pos = torch.tensor([positions[r] for r in idx])
            sel = torch.log_softmax(logits[torch.arange(len(idx)), pos].float(), dim=-1)
            tgt = torch.tensor([targets[r] for r in idx])
            nll = -sel[torch.arange(len(idx)), tgt]
            for j, r in enumerate(idx):
                out[r] = float(nll[j])
    return out


class MaskedLMScorer(Scorer):
    """Paper Sec. 5.2: masked-LM pseudo-log-likelihood, one masked copy per token, batched."""

    name = "mlm_pll"

    def __init__(self, model, tokenizer, batch_size: int = 64):
        if tokenizer.mask_token_id is None:
            raise ConfigError("the masked LM's tokenizer has no mask token: mlm_pll needs a masked language model")
        self.model, self.tok, self.batch_size = model.eval(), tokenizer, batch_size

    @classmethod
    def from_path(cls, path: str | Path, batch_size: int = 64) -> "MaskedLMScorer":
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        p = Path(path) if path else None
        if p is None or not p.exists():
            raise ConfigError(f"library.division.mlm_path={path!r} is not a local directory: set it to a "
                              "CodeBERT-style masked LM (config.json + weights + tokenizer) or use scorer causal_surprisal")
        return cls(AutoModelForMaskedLM.from_pretrained(p), AutoTokenizer.from_pretrained(p), batch_size)

    def score(self, texts, prefixes=None):
        tok = self.tok
        cls_ids = [tok.cls_token_id] if tok.cls_token_id is not None else []
        sep_ids = [tok.sep_token_id] if tok.sep_token_id is not None else []
        rows, pos, tgt, owner, meta = [], [], [], [], []
        for k, text in enumerate(texts):
            prefix = prefixes[k] if prefixes else ""
            pids, _ = _encode(tok, prefix) if prefix else ([], [])
            ids, offs = _encode(tok, text)
            keep = [i for i, (a, b) in enumerate(offs) if b > a]
            base = cls_ids + pids + ids + sep_ids
            start = len(cls_ids) + len(pids)
            for i in keep:
                row = list(base)
                row[start + i] = tok.mask_token_id
                rows.append(row), pos.append(start + i), tgt.append(ids[i]), owner.append(k)
            meta.append([offs[i] for i in keep])
        nll = _batched_target_nll(self.model, rows, pos, tgt, tok.pad_token_id or 0, self.batch_size)
        out = [TokenScores(t, meta[k], [], 0) for k, t in enumerate(texts)]
        for r, k in enumerate(owner):
            out[k].scores.append(nll[r])
            out[k].rows += 1
        return out


class CausalSurprisalScorer(Scorer):
    """l_i = -log P(t_i | prefix, t_<i), one forward row per text (offline default)."""

    name = "causal_surprisal"

    def __init__(self, model, tokenizer, batch_size: int = 16):
        self.model, self.tok, self.batch_size = model, tokenizer, batch_size
        self.start_id = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
        if self.start_id is None:
            raise ConfigError("the causal scorer's tokenizer has neither a BOS nor an EOS token to start a sequence")
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.start_id

    def score(self, texts, prefixes=None):
        import torch

        items = []
        for k, text in enumerate(texts):
            prefix = prefixes[k] if prefixes else ""
            pids, _ = _encode(self.tok, prefix) if prefix else ([], [])
            ids, offs = _encode(self.tok, text)
            items.append(([self.start_id] + pids + ids, 1 + len(pids), ids, offs))
        order = sorted(range(len(items)), key=lambda r: len(items[r][0]))
        res: dict[int, TokenScores] = {}
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                idx = order[b:b + self.batch_size]
                width = max(len(items[r][0]) for r in idx)
                x = torch.full((len(idx), width), self.pad_id, dtype=torch.long)
                am = torch.zeros_like(x)
                for j, r in enumerate(idx):
                    x[j, :len(items[r][0])] = torch.tensor(items[r][0])
                    am[j, :len(items[r][0])] = 1
                lp = torch.log_softmax(self.model(input_ids=x, attention_mask=am).logits.float(), dim=-1)
                for j, r in enumerate(idx):
                    row, start, ids, offs = items[r]
                    sc = [-float(lp[j, start + i - 1, ids[i]]) for i in range(len(ids))]
                    keep = [i for i, (a, c) in enumerate(offs) if c > a]
                    res[r] = TokenScores(texts[r], [offs[i] for i in keep], [sc[i] for i in keep], 1)
        return [res[k] for k in range(len(texts))]


class FimPLLScorer(Scorer):
    """Bidirectional pseudo-NLL through fill-in-the-middle: one forward row per token."""

    name = "fim_pll"
    FIM = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")

    def __init__(self, model, tokenizer, batch_size: int = 32):
        self.model, self.tok, self.batch_size = model, tokenizer, batch_size
        ids = [tokenizer.convert_tokens_to_ids(t) for t in self.FIM]
        if any(i is None or i == tokenizer.unk_token_id for i in ids):
            raise ConfigError(f"the scorer model has no fill-in-the-middle tokens {self.FIM}: use causal_surprisal")
        self.pre, self.suf, self.mid = ids
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def score(self, texts, prefixes=None):
        rows, pos, tgt, owner, meta = [], [], [], [], []
        for k, text in enumerate(texts):
            prefix = prefixes[k] if prefixes else ""
            pids, _ = _encode(self.tok, prefix) if prefix else ([], [])
            ids, offs = _encode(self.tok, text)
            keep = [i for i, (a, b) in enumerate(offs) if b > a]
            for i in keep:
                row = [self.pre] + pids + ids[:i] + [self.suf] + ids[i + 1:] + [self.mid]
                rows.append(row), pos.append(len(row) - 1), tgt.append(ids[i]), owner.append(k)
            meta.append([offs[i] for i in keep])
        nll = _batched_target_nll(self.model, rows, pos, tgt, self.pad_id, self.batch_size)
        out = [TokenScores(t, meta[k], [], 0) for k, t in enumerate(texts)]
        for r, k in enumerate(owner):
            out[k].scores.append(nll[r])
            out[k].rows += 1
        return out


_SCORER_CACHE: dict[tuple, Scorer] = {}


def scorer_models(division: DivisionSettings) -> Mapping:
    """The scorer models by key: as read at composition, else from the file
    ``library.division.models_file`` names (relative to the project root; a DVC dep of the
    stages that load a scorer)."""
    if division.models is not None:
        return division.models
    from ..config import project_root
    from ..settings import read_scorer_models

    return read_scorer_models(division.models_file, project_root())


def scorer_model_cfg(division: DivisionSettings, models: Mapping | None = None) -> Mapping:
    """The scorer model's config: ``library.division.model``, a key of ``models`` (default:
    :func:`scorer_models`)."""
    models = scorer_models(division) if models is None else models
    name = division.model
    if name not in models:
        raise ConfigError(f"library.division.model={name!r} is not a key of the scorer models "
                          f"({division.models_file}); known: {', '.join(models) or '(none)'}")
    cfg = models[name]
    if not (cfg or {}).get("gguf"):
        raise ConfigError(f"scorer model {name}: gguf is missing: name the scorer model's GGUF parts")
    return cfg


def scorer_gguf_path(division: DivisionSettings, models_dir: str | Path, models: Mapping | None = None) -> Path:
    """Assemble/check the scorer GGUF (:func:`scorer_model_cfg`) and return its path."""
    from ..llm.local import ensure_model

    return ensure_model(scorer_model_cfg(division, models), models_dir)


def get_scorer(division: DivisionSettings, models_dir: str | Path | None = None,
               models: Mapping | None = None) -> Scorer:
    """The scorer named by ``library.division.scorer`` (its GGUF a key of ``models``, default
    :func:`scorer_models`); models load once per process."""
    name, bs = division.scorer, division.batch_size
    if name not in SCORERS:
        raise ConfigError(f"unknown division scorer {name!r}; known: {', '.join(SCORERS)}")
    if name == "mlm_pll":
        key = (name, str(division.mlm_path), bs)
        if key not in _SCORER_CACHE:
            _SCORER_CACHE[key] = MaskedLMScorer.from_path(division.mlm_path, bs)
        return _SCORER_CACHE[key]
    if models_dir is None:
        raise ConfigError("get_scorer needs models_dir (testleak.paths.Paths().models) for the GGUF scorer")
    from ..llm.hf import load_causal_lm

    path = scorer_gguf_path(division, models_dir, models)
    dtype = scorer_model_cfg(division, models)["dtype"]
    key = (name, str(path), dtype, bs)
    if key not in _SCORER_CACHE:
        model, tok = load_causal_lm(path, dtype)
        _SCORER_CACHE[key] = (CausalSurprisalScorer if name == "causal_surprisal" else FimPLLScorer)(model, tok, bs)
    return _SCORER_CACHE[key]


# ----------------------------------------------------------------------------- division
@dataclass
class Division:
    """One divided instance. ``tokens``: (start, end, score, role) with role template|fragment."""

    text: str
    template: str
    fragments: list[dict]
    threshold: float
    tokens: list[dict] = field(default_factory=list)

    def to_record(self) -> dict:
        return {"text": self.text, "template": self.template, "fragments": self.fragments,
                "threshold": self.threshold, "tokens": self.tokens}


def _runs(flags: Sequence[bool]) -> list[tuple[int, int]]:
    """Maximal runs [i, j) of True."""
    runs, i = [], 0
    while i < len(flags):
        if flags[i]:
            j = i
            while j < len(flags) and flags[j]:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


def _trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a] in _TRIM:
        a += 1
    while b > a and text[b - 1] in _TRIM:
        b -= 1
    return a, b


def divide(ts: TokenScores, slot: str, quantile: float = 0.25, value_span: tuple[int, int] | None = None,
           policy: str = "anchor", min_fragment_chars: int = 3) -> Division:
    """Divide one scored instance into an abstract template and fragments (see module doc)."""
    if policy not in VALUE_SPAN_POLICIES:
        raise ConfigError(f"unknown library.division.value_span {policy!r}; known: {', '.join(VALUE_SPAN_POLICIES)}")
    if not 0.0 < quantile < 1.0:
        raise ConfigError(f"library.division.quantile must be in (0, 1), got {quantile}")
    if not ts.scores:
        raise DataError("instance has no scorable tokens")
    if not all(math.isfinite(s) for s in ts.scores):
        raise DataError("scorer returned a non-finite token score")
    text = ts.text
    thr = float(np.quantile(np.asarray(ts.scores, dtype=float), quantile))
    high = [s > thr for s in ts.scores]
    regions: list[tuple[int, int]] = []   # character regions replaced by the slot
    frags: list[tuple[int, int, str]] = []
    if policy == "score" or value_span is None:
        if policy == "anchor" and value_span is None:
            raise DataError("value_span policy 'anchor' needs the value's span; pass value_span or use policy 'score'")
        for i, j in _runs(high):
            a, b = _trim(text, ts.spans[i][0], ts.spans[j - 1][1])
            if b > a:
                regions.append((a, b))
                frags.append((a, b, "score"))
        roles = ["fragment" if h else "template" for h in high]
    else:
        va, vb = value_span
        if not (0 <= va < vb <= len(text)):
            raise DataError(f"value span {value_span} lies outside the instance of length {len(text)}")
        regions.append((va, vb))
        frags.append((va, vb, "value"))
        inside = [a < vb and b > va for a, b in ts.spans]
        for i, j in _runs([h and n for h, n in zip(high, inside)]):
            a, b = _trim(text, max(ts.spans[i][0], va), min(ts.spans[j - 1][1], vb))
            if b - a >= min_fragment_chars and (a, b) != (va, vb):
                frags.append((a, b, "score"))
        roles = ["fragment" if n else "template" for n in inside]
    pieces, last = [], 0
    for a, b in sorted(regions):
        pieces.append(text[last:a] + slot)
        last = b
    template = "".join(pieces) + text[last:]
    fr = [{"text": text[a:b], "start": a, "end": b, "by": by} for a, b, by in frags]
    toks = [{"start": a, "end": b, "score": round(s, 4), "role": r}
            for (a, b), s, r in zip(ts.spans, ts.scores, roles)]
    return Division(text, template, fr, thr, toks)
