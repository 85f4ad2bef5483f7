"""Baselines of paper Sec. 6.1 / App. A.2, re-implemented from their descriptions:
CodexLeaks (Niu et al. 2023, :mod:`.codexleaks`) and Codebreaker (Han et al. 2025,
:mod:`.codebreaker`). Both return ``response/1`` records (method ``codexleaks`` |
``codebreaker``) that the unchanged ExtractPII -> judge -> corpus search -> review chain
consumes; ``tests_text`` = prompt + continuation, ``prompt_text`` = the prompt.

They are registered by name with every other method in :mod:`testleak.methods`::

    from testleak import methods
    recs = methods.get("codexleaks").elicit(RunInputs(settings, taxonomy, gateway, budget=budget,
                                                       model=model_cfg, baselines=baselines_cfg))
"""

from __future__ import annotations

from .codebreaker import run_codebreaker
from .codexleaks import run_codexleaks
from .common import perplexity

__all__ = ["run_codexleaks", "run_codebreaker", "perplexity"]
