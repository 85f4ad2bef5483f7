"""Ours' questions in the canary calibration: asked anew for every elicitation
seed (the questioner's gateway at that seed draws other samples), kept per seed under
data/canary/questions/ for the runs of both models at that seed."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..errors import DataError
from ..records import read_jsonl, write_jsonl


def questions_of(cp, seed: int) -> Path:
    """The questions of elicitation seed ``seed`` under ``cp`` (a :class:`.pipeline.CanaryPaths`)."""
    return cp.questions / f"s{int(seed)}.jsonl"


def ensure_questions(params: Mapping, paths, seed: int = 0) -> list[dict]:
    """The questions of ours' calibration runs at elicitation seed ``seed``: generated once per seed
    (the questioner's gateway at that seed draws other samples, so every seed asks other questions)
    and kept in :func:`questions_of` for the runs of both models at that seed."""
    from ..elicit import generate_questions
    from ..llm import open_gateway
    from ..llm.answers import answer_settings
    from ..taxonomy import Taxonomy
    from .pipeline import CanaryPaths

    path = questions_of(CanaryPaths(paths), seed)
    if path.exists():
        return read_jsonl(path, kind="question")
    tax = Taxonomy.from_config(params)
    exp = params["experiment"]
    with open_gateway(params["questioner"], paths=paths, attribution={"stage": "canary"},
                      answers=answer_settings(params), seed=int(seed)) as gw:
        qs, _ = generate_questions(tax, exp["scenarios"], int(exp["questions_per_scenario"]), gw)
    if not qs:
        raise DataError(f"the questioner produced no question for the canary experiment at seed {seed}: see "
                        f"logs/llm_calls.jsonl")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(path, qs, kind="question")
    return read_jsonl(path, kind="question")      # as every run reads them (tagged records)
