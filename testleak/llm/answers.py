"""What an LLM answer must be to count as one, per purpose of the call (``answers`` in params).

An HTTP 200 can still carry no answer. The gateway checks every answer, received or cached (a
cached one may predate a rule), with :meth:`AnswerPolicy.problem`, in order: ``encoding`` (invalid
Unicode), ``empty`` (only whitespace), ``oversized`` (over ``max_chars``, so a server that ignores
``max_tokens`` cannot buy thousands of candidates), ``truncated`` (cut by ``max_tokens`` for a
purpose in ``whole``, or before the reader found its answer; otherwise a cut answer is data) and
``invalid`` (the caller's ``ChatRequest.accept`` finds no answer). Each is a failed call of that
``error_kind``: never cached, counted, failing the stage above ``max_error_share``. Non-greedy
requests are first asked again :data:`RETRIES` times with another sample; a greedy one would
answer the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..settings import Answers

#: Other samples asked for a failed answer of a request that samples.
RETRIES = 1
#: The error kinds of an answer that is not one (:meth:`AnswerPolicy.problem`).
ANSWER_FAILURES = ("encoding", "empty", "oversized", "truncated", "invalid")


def answer_settings(params: Mapping) -> Answers:
    """``answers`` of the composed params (:func:`testleak.config.typed`). Stages and the per-run
    chain pass ``typed(params, "answers")`` to ``open_gateway`` themselves; this remains for the
    canary calibration (testleak/canary/pipeline.py), which calls it."""
    from ..config import typed

    return typed(params, "answers")


@dataclass(frozen=True)
class AnswerPolicy:
    """The checks of one gateway's answers (module docstring); ``cfg``: ``answers`` of params."""
    settings: Answers

    @classmethod
    def from_config(cls, cfg: Answers | Mapping | None) -> "AnswerPolicy":
        """The policy of ``answers`` (``typed(params, "answers")``; a mapping is validated, None: the
        schema's defaults)."""
        if isinstance(cfg, Answers):
            return cls(cfg)
        return cls(Answers.model_validate(dict(cfg or {}), strict=False))

    retries: int = RETRIES

    def problem(self, text: str | None, finish_reason: str | None, purpose: str | None,
                accept: Callable[[str], str | None] | None = None) -> tuple[str, str] | None:
        """``(error kind, one-line message)`` when ``text`` is not an answer for ``purpose``, else
        None. The message never quotes the text."""
        text = text or ""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            return "encoding", f"answer is not valid Unicode (character {e.start} of {len(text)} cannot be encoded)"
        if not text.strip():
            return "empty", f"empty answer ({len(text)} characters, {'all whitespace' if text else 'none'})"
        limit = self.settings.max_chars_for(purpose)
        if len(text) > limit:
            return "oversized", (f"answer of {len(text)} characters, above answers.max_chars "
                                 f"{purpose if purpose in self.settings.max_chars else 'default'}={limit}")
        if finish_reason == "length" and purpose in self.settings.whole:
            return "truncated", f"answer cut by max_tokens (finish_reason: length); a {purpose} answer must be whole"
        if accept is not None:
            why = accept(text)
            if why and finish_reason == "length":
                return "truncated", (f"answer cut by max_tokens (finish_reason: length) before it held a "
                                     f"{purpose or 'usable'} answer: {why}")
            if why:
                return "invalid", f"not a {purpose or 'usable'} answer: {why}"
        return None


def resample_helps(sampling: Mapping[str, Any]) -> bool:
    """Another sample of the request can differ: its temperature (``sampling``: the request's
    sampling parameters) is not 0 (unset: the endpoint's default, which samples)."""
    t = sampling.get("temperature")
    return t is None or float(t) > 0


def resample_params(sampling: Mapping[str, Any], attempt: int) -> dict:
    """The sampling parameters of retry ``attempt`` (1, 2, ...) of a failed answer: another ``seed``
    when the request names one (the local server), deterministic in the seed and the attempt."""
    out = dict(sampling)
    if "seed" in out and out["seed"] is not None:
        out["seed"] = (int(out["seed"]) + attempt * 0x9E3779B1) % 2**31
    return out


__all__ = ["ANSWER_FAILURES", "AnswerPolicy", "answer_settings", "resample_helps", "resample_params"]
