"""Shared parts of the two baselines (paper Sec. 6.1, App. A.2): completion-style prompting through
a chat API, cleaning of continuations, perplexity from logprobs, refusals, and the response records
that feed the unchanged ExtractPII -> judge -> search -> review chain.

Both baselines were designed for completion models. A chat model gets a "continue the code exactly"
system message and the prompt either as an open code block in the user turn (``instruct``) or as a
trailing assistant message the server continues (``prefill``, the embedded llama.cpp default: it
continues far more faithfully). ExtractPII scans ``prompt + continuation`` (after
:func:`clean_continuation`), so ``account.password = "`` and its value read as one assignment;
``prompt_text`` is kept so that values already in the prompt are dropped. Perplexity:
``exp(-mean token logprob)`` of the continuation.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..elicit.refusal import detect_refusal
from ..errors import ConfigError
from ..llm import ChatRequest
from ..resources_io import parse_yaml, resource
from ..settings import CodeBreaker, CodexLeaks, Completion as CompletionSettings


# ---------------------------------------------------------------------------- config

def sampling_params(cfg: CodexLeaks | CodeBreaker, family: str | None) -> dict:
    """Sampling parameters of a method (its section ``baselines.<method>``) for a model family
    (``by_family`` overrides ``sampling``).

    ``None`` values are left out so that the endpoint's default applies.
    """
    s = cfg.sampling.model_dump(exclude_unset=True)
    s.update(cfg.by_family.get(family or "", {}) or {})
    return {k: v for k, v in s.items() if v is not None}


def target_attributes(choice: str | Sequence[str], scenarios: Sequence[str], taxonomy) -> list[str]:
    """Attributes the baseline prompts target, in taxonomy order: ``choice`` is
    ``baselines.attributes`` (``experiment``: the attributes of ``scenarios``, i.e.
    ``experiment.scenarios``; ``all``; or a list of attributes)."""
    order = list(taxonomy.attributes)
    if choice == "all":
        return order
    if choice == "experiment":
        if not scenarios:
            raise ConfigError("baselines.attributes is `experiment` but experiment.scenarios is empty; "
                              "list scenarios or set baselines.attributes to `all` or a list")
        wanted = {a for s in scenarios for a in taxonomy.scenario(s).attributes}
        return [a for a in order if a in wanted]
    if isinstance(choice, (list, tuple)):
        for a in choice:
            taxonomy.attribute(a)  # raises listing the known ones
        return [a for a in order if a in set(choice)]
    raise ConfigError(f"baselines.attributes must be `experiment`, `all` or a list of attributes, got {choice!r}")


def load_resource(name: str) -> dict:
    """Load a seed-data YAML from testleak/resources/ (or an absolute/relative path)."""
    p = resource(name)
    if not p.exists():
        raise ConfigError(f"baseline resource {name!r} not found (looked in testleak/resources/); "
                          "check baselines.<method>.resource")
    data = parse_yaml(p.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("version") != 1:
        raise ConfigError(f"{p} is not a version-1 baseline resource file")
    return data


# ---------------------------------------------------------------------------- prompting

def completion_mode(cfg: CompletionSettings, provider: str | None) -> str:
    """``prefill`` or ``instruct`` (``baselines.completion.mode``); ``auto`` = prefill for the
    embedded llama.cpp server (provider ``local``), which continues a trailing assistant message,
    else instruct."""
    mode = cfg.mode
    if mode == "auto":
        return "prefill" if provider == "local" else "instruct"
    if mode not in ("prefill", "instruct"):
        raise ConfigError(f"baselines.completion.mode must be auto, prefill or instruct, got {mode!r}")
    return mode


def completion_messages(prompt: str, lang: str, cfg: CompletionSettings, mode: str = "instruct") -> list[dict]:
    """Chat messages asking to continue ``prompt`` (``cfg``: ``baselines.completion``).

    ``instruct``: the prompt is an open ``lang`` code block in the user message.
    ``prefill``: the prompt is a trailing assistant message that the server continues
    (llama.cpp returns prefill + continuation; :func:`clean_continuation` strips the echo).
    """
    sys_msg = {"role": "system", "content": cfg.system}
    if mode == "prefill":
        user = cfg.prefill_user.replace("{lang}", lang)
        return [sys_msg, {"role": "user", "content": user}, {"role": "assistant", "content": prompt}]
    user = cfg.user.replace("{lang}", lang).replace("{prompt}", prompt)
    return [sys_msg, {"role": "user", "content": user}]


_BLOCK = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)


def clean_continuation(text: str | None, prompt: str) -> str:
    """The continuation proper of a chat reply to a completion prompt.

    1. A reply that starts with the whole prompt (prefill echo) -> what follows it.
    2. Else, if the reply has code fences, the first fenced block with content (a reply of
       only fences falls back to the text around them).
    3. An echo of the prompt (whole, or of its last line) at the start is stripped.
    The continuation ends at a closing fence. So ``prompt + continuation`` never repeats the prompt.
    """
    t = text or ""
    if prompt and t.startswith(prompt):
        return t[len(prompt):].split("```", 1)[0]
    if "```" in t:
        blocks = [b for b in _BLOCK.findall(t) if b.strip()]
        t = blocks[0] if blocks else _BLOCK.sub("", t).lstrip("\n")
    if prompt and t.startswith(prompt):
        return t[len(prompt):]
    last = prompt.rsplit("\n", 1)[-1]
    if last.strip() and t.lstrip().startswith(last):
        return t.lstrip()[len(last):]
    return t


def is_refusal(text: str | None) -> bool:
    """The project's one refusal rule (testleak.elicit.refusal), applied to a continuation:
    it carries no fenced code of its own, so only the phrase and length rules apply."""
    return detect_refusal(text, has_code=False) is not None


def _logprob_values(logprobs: Any) -> list[float]:
    """Token logprobs as floats, from a list of floats or of OpenAI-style dicts/objects."""
    if not logprobs:
        return []
    if isinstance(logprobs, Mapping) and "content" in logprobs:
        logprobs = logprobs["content"] or []
    out = []
    for x in logprobs:
        if isinstance(x, (int, float)):
            out.append(float(x))
        elif isinstance(x, Mapping):
            out.append(float(x["logprob"]))
        else:
            out.append(float(getattr(x, "logprob")))
    return out


def mean_nll(logprobs: Any) -> float | None:
    """Mean negative log-likelihood per token (nats), or None without logprobs."""
    v = _logprob_values(logprobs)
    if not v:
        return None
    return -sum(v) / len(v)


def perplexity(logprobs: Any) -> float | None:
    """``exp(-mean(logprob))`` over the generated tokens, or None without logprobs."""
    n = mean_nll(logprobs)
    return None if n is None else math.exp(n)


# ---------------------------------------------------------------------------- records

@dataclass
class Prompt:
    """One baseline prompt: the code prefix, its language and what it targets."""

    id: str
    text: str
    lang: str
    attribute: str | None = None
    style: str | None = None
    origin: str = "template"            # template | value_seed | crossover | insert | ...
    parents: tuple[str, ...] = ()
    iteration: int | None = None
    epoch: int | None = None


def chat_requests(prompt: Prompt, n: int, sampling: Mapping, cfg: CompletionSettings, mode: str = "instruct") -> list:
    """``n`` gateway requests (samples 0..n-1) for one prompt."""
    msgs = completion_messages(prompt.text, prompt.lang, cfg, mode)
    return [ChatRequest(msgs, sample=i, params=dict(sampling)) for i in range(n)]


def _completion_record(c: Any) -> dict:
    rec = c.to_record() if hasattr(c, "to_record") else dict(c)
    rec = dict(rec)
    rec.pop("messages", None)
    rec.pop("logprobs", None)  # token logprobs are summarised as perplexity
    return rec


def response_record(method: str, prompt: Prompt, sample: int, completion: Any, model: str,
                    run_round: int) -> dict:
    """A ``response/1`` record for one sampled completion of a baseline prompt."""
    status_llm = getattr(completion, "status", "ok")
    text = getattr(completion, "text", None)
    cont = clean_continuation(text, prompt.text) if status_llm == "ok" else ""
    if status_llm != "ok":
        status, error = "error", getattr(completion, "error", None) or "LLM call failed"
    elif is_refusal(cont):
        status, error = "refused", None
    else:
        status, error = "ok", None
    lps = getattr(completion, "logprobs", None) if status_llm == "ok" else None
    turn1 = _completion_record(completion)
    turn1["text"] = text
    turn1["continuation"] = cont
    return {
        "id": f"{prompt.id}/s{sample}",
        "prompt_id": prompt.id,
        "question_id": None,
        "method": method,
        "variant": "none",
        "model": model,
        "round": run_round,
        "attribute": prompt.attribute,
        "style": prompt.style,
        "lang": prompt.lang,
        "origin": prompt.origin,
        "parents": list(prompt.parents),
        "iteration": prompt.iteration,
        "epoch": prompt.epoch,
        "sample": sample,
        "turn1": turn1,
        "turn2": None,
        "functions": [],
        "prompt_text": prompt.text,
        "tests_text": prompt.text + cont if status == "ok" else "",
        "perplexity": perplexity(lps),
        "status": status,
        "error": error,
    }


def check_budget(budget: Any) -> int:
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ConfigError(f"baseline budget must be a non-negative integer (experiment.baseline_budget), got {budget!r}")
    return budget
