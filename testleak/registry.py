"""The names a config chooses among, one registry each: the list that the typed schema
(testleak/settings/) and the code that implements the names check a name against.

They live in layer 1, below their implementations, so that the schema can read them without
importing those (docs/ARCHITECTURE.md, "Layers"): each implementing module binds one
implementation per name and fails at import when a name has none (``methods._REGISTRY``,
``verify.search.BACKENDS``; the review policies in ``verify.review.confirm``, the judge modes in
``verify.judge.judge_candidates``). Each registry maps a name to what it is (one line).
"""

from __future__ import annotations

from typing import Mapping

from .errors import ConfigError

#: elicitation methods (``experiment.protocol.R.method``): testleak/methods.py registers each
METHODS: dict[str, str] = {
    "ours": "scenario questions -> code turn -> G(c) -> test turn with library hints (paper Sec. 4)",
    "codexleaks": "CodexLeaks templates, perplexity ranking (Niu et al. 2023)",
    "codebreaker": "Codebreaker seeds, MI selection, mutation (Han et al. 2025)",
}
#: the methods that are baselines (verified by ``baselines.protocol``, testleak/baselines/published.py)
BASELINE_METHODS = ("codexleaks", "codebreaker")
#: the baselines' verification protocols (``baselines.protocol``)
BASELINE_PROTOCOLS = ("published", "shared")

#: corpus search backends (``verifier.backend``): testleak/verify/search.py opens each
BACKENDS: dict[str, str] = {
    "local": "exact substring FTS5 trigram index over a local code corpus",
    "infinigram": "infini-gram suffix array over the same corpus",
    "github": "GitHub REST code search",
}

#: review policies (``review.policy``): testleak/verify/review.py applies each
POLICIES: dict[str, str] = {
    "both_yes": "every configured reviewer said yes (the paper)",
    "yes_or_likely": "every reviewer said yes or likely",
    "auto": "in window and judge-plausible, for unattended runs",
}

#: judge modes (``verifier.judge_mode``, ``canary.judge_mode``): testleak/verify/judge.py
JUDGE_MODES: dict[str, str] = {
    "rules": "format rules only",
    "judge": "the judge LLM only",
    "both": "the judge sees only rule-passing candidates; kept = both say yes",
}


def one_of(names) -> str:
    """``'a', 'b' or 'c'``: the known names as the schema's messages list them."""
    q = [repr(str(n)) for n in names]
    return q[0] if len(q) == 1 else f"{', '.join(q[:-1])} or {q[-1]}"


def check(registry: Mapping, value, key: str) -> str:
    """``value`` when it is a name of ``registry``, else :class:`ConfigError` naming ``key`` and
    listing the known names (for configs that did not pass the schema: built by code)."""
    if value not in registry:
        raise ConfigError(f"unknown {key} {value!r}; known: {', '.join(registry)}")
    return value
