"""The method registry: every elicitation method registers here, by name, in one place.

A *method* turns a run's inputs into ``response/1`` records for the unchanged per-run chain
(:mod:`testleak.pipeline`): ``ours`` (:mod:`testleak.elicit`), ``codexleaks`` and ``codebreaker``
(:mod:`testleak.baselines`). Stages and the canary calibration look methods up with :func:`get`
(an unknown name fails listing the known ones); the names are :data:`testleak.registry.METHODS`.
To add a method: docs/ARCHITECTURE.md, "How to add". :func:`summarize` counts response statuses
(the statuses are :data:`testleak.records.RESPONSE_STATUSES`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from . import registry
from .baselines import run_codebreaker, run_codexleaks
from .baselines.common import target_attributes
from .config import select
from .errors import ConfigError, DataError
from .extract.core import extract_detailed
from .records import RESPONSE_STATUSES
from .elicit.responses import ElicitSettings, elicit, elicit_budgeted, questions_for_run
from .settings import Baselines
from .taxonomy import Taxonomy

#: The status of every response record (:data:`testleak.records.RESPONSE_STATUSES`, which readers
#: check): ``ok``, ``refused``, ``no_code``, ``error``. Nothing is dropped: every failure is a
#: counted record.
STATUSES = RESPONSE_STATUSES


@dataclass(frozen=True)
class RunInputs:
    """What a method receives for one run: its settings, typed (no params mapping)."""
    settings: ElicitSettings              # the run's resolved settings (method, round, seed, ablation, sizes)
    taxonomy: Taxonomy
    gateway: Any                          # an open testleak.llm gateway for the model under test
    questions: list[dict] | None = None   # scenario questions (when Method.wants_questions)
    library: Mapping | None = None        # the run's privacy feature library (when Method.wants_library)
    budget: Any = None                    # a testleak.equalcost.ResponseBudget or an integer (LLM responses): a
                                          # baseline's (required), or a token target for a run of ours (the canary
                                          # calibration's ablations)
    model: Mapping | None = None          # the config of the model under test (config.run_model): name, provider, family
    baselines: Baselines | None = None    # ``baselines`` (the baseline methods)


@dataclass(frozen=True)
class Method:
    name: str
    elicit: Callable[[RunInputs], Iterable[dict]]
    wants_questions: Callable[[ElicitSettings], bool]
    wants_library: Callable[[ElicitSettings], bool]
    doc: str = ""


_REGISTRY: dict[str, Method] = {}


def register(name: str, elicit_fn: Callable[[RunInputs], Iterable[dict]], *,
             wants_questions: Callable[[ElicitSettings], bool] = lambda s: False,
             wants_library: Callable[[ElicitSettings], bool] = lambda s: False, doc: str = "") -> Method:
    """Register method ``name``, a name of :data:`testleak.registry.METHODS` (whose line is its
    ``doc`` unless given); an unknown name or a second registration of a name is a bug."""
    if name not in registry.METHODS:
        raise ValueError(f"method {name!r} is not in testleak/registry.py METHODS: add it there (the schema reads it)")
    if name in _REGISTRY:
        raise ValueError(f"method {name!r} is registered twice")
    m = _REGISTRY[name] = Method(name, elicit_fn, wants_questions, wants_library, doc or registry.METHODS[name])
    return m


def get(name: str) -> Method:
    """The registered method ``name``; an unknown name fails listing the known ones."""
    return _REGISTRY[select(None, str(name), list(_REGISTRY), "method")]


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def summarize(records: Iterable[Mapping], taxonomy=None) -> dict:
    """Counts of response records by status (no raw values), for logs and stats, and their test
    cases: ``tests_requested`` (the tests asked of the answered ones, one per baseline response)
    and, given the ``taxonomy``, ``test_cases`` as Table 3 counts them (the tests the model wrote,
    :func:`tests_written`; what ``experiment.baseline_unit: test_cases`` matches), else the
    requested ones."""
    records = list(records)
    out = {"responses": 0, **{s: 0 for s in STATUSES}, "test_cases": 0, "tests_requested": 0}
    for r in records:
        s = r.get("status", "error")
        out["responses"] += 1
        out[s] = out.get(s, 0) + 1
        if s != "error":
            out["tests_requested"] += int(r.get("tests_requested") or 1)
    out["test_cases"] = (out["tests_requested"] if taxonomy is None else
                         sum(response_test_cases(r) for r in with_tests_written(records, taxonomy)))
    return out


def response_status(response: Mapping) -> str:
    """A response record's status (one of :data:`STATUSES`), or a DataError naming the record."""
    s = response.get("status")
    if s not in STATUSES:
        raise DataError(
            f"response {response.get('id')!r} has status {s!r}; expected one of {', '.join(STATUSES)}: "
            "rerun the responses stage"
        )
    return s


def response_test_cases(response: Mapping, default_tests: int = 1) -> int:
    """Test cases of one response: the tests the model wrote (``tests_written``, set by
    :func:`with_tests_written` from the test turn), else ``tests_requested`` (else
    ``default_tests``); 0 for errors."""
    if response_status(response) == "error":
        return 0
    n = response.get("tests_written")
    if n is None:
        n = response.get("tests_requested")
    return default_tests if n is None else int(n)


def tests_written(response: Mapping, taxonomy) -> int | None:
    """The tests the model wrote in its test turn (``turn2.text``), as ExtractPII delimits them
    (test functions, parametrize rows, "Test case N" markers); an answer with code but no
    delimiter is one test; 0 unless the status is ``ok``. None without a test turn text."""
    t2 = response.get("turn2")
    if not isinstance(t2, Mapping) or not isinstance(t2.get("text"), str):
        return None
    if response_status(response) != "ok":
        return 0
    fns = response.get("functions") or []
    lang = fns[0].get("language") if fns and isinstance(fns[0], Mapping) else None
    _, info = extract_detailed(t2["text"], taxonomy, language=lang)
    return max(int(info.tests), 1)


def with_tests_written(responses: Iterable[Mapping], taxonomy) -> list[dict]:
    """The responses, each with ``tests_written`` (:func:`tests_written`) when it has a test turn;
    a record that already holds it (the responses stage writes it) keeps its count."""
    out = []
    for r in responses:
        n = r.get("tests_written")
        if n is None:
            n = tests_written(r, taxonomy)
        out.append(dict(r) if n is None else {**r, "tests_written": n})
    return out


# ------------------------------------------------------------------------- the built-in methods

def elicit_ours(inp: RunInputs) -> Iterator[dict]:
    s = inp.settings
    qs = questions_for_run(s, inp.questions, inp.taxonomy, s.scenarios, s.questions_per_scenario)
    lib = inp.library if s.library_hints else None
    if inp.budget is not None:      # a token target: the questions again (other samples) until it is reached
        return elicit_budgeted(qs, s, inp.taxonomy, inp.gateway, inp.budget, lib)
    return elicit(qs, s, inp.taxonomy, inp.gateway, lib)


def _baseline(runner) -> Callable[[RunInputs], Iterator[dict]]:
    def run(inp: RunInputs) -> Iterator[dict]:
        s, cfg = inp.settings, inp.baselines
        if inp.budget is None or cfg is None or inp.model is None:
            raise ConfigError(f"run {s.run!r}: a baseline needs RunInputs.budget, .model and .baselines "
                              "(testleak.pipeline.responses gives them)")
        attrs = target_attributes(cfg.attributes, s.scenarios, inp.taxonomy)
        for r in runner(cfg, inp.model, attrs, inp.gateway, inp.budget, s.seed, run_round=s.round):
            yield {**r, "run": s.run}
    run.__name__ = f"elicit_{runner.__name__.removeprefix('run_')}"
    return run


register("ours", elicit_ours, wants_questions=lambda s: s.scenario_questions,
         wants_library=lambda s: s.library_hints)
register("codexleaks", _baseline(run_codexleaks))
register("codebreaker", _baseline(run_codebreaker))
assert set(_REGISTRY) == set(registry.METHODS), "a name of testleak/registry.py METHODS has no register() line here"

#: The registered method names, in registration order.
METHODS = names()
