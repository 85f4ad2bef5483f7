"""The root of the schema (:class:`Settings`: one field per config group, the cross-group rules)
and the small groups (presidio, answers, budget)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, PrivateAttr, model_validator

from ..resources_io import read_presidio_entities
from ._base import _Strict, _data_file
from .baselines import Baselines
from .canary import Canary
from .experiment import AblationFlags, Experiment
from .library import Library
from .messages import _rule
from .models import LLM
from .taxonomy import Taxonomy
from .verifier import Review, Verifier


class Presidio(_Strict):
    """conf/presidio/: Presidio's analyzer offline (testleak/presidio.py)."""
    model: str = Field(min_length=1)        # installed spaCy pipeline package
    language: str = Field(min_length=2)
    score_threshold: float = Field(ge=0, le=1)
    # entity type -> attribute (null = unmapped, counted): a data file (testleak/resources/
    # presidio_entities.yaml), a DVC dep of the stages that declare presidio; read at composition
    entities_file: str = Field(min_length=1)
    _entities: dict | None = PrivateAttr(default=None)

    @property
    def entities(self) -> dict | None:
        """The entity table (None in a stage's load of params.yaml: checked at composition)."""
        return self._entities

    @model_validator(mode="after")
    def _load(self, info):
        self._entities = _data_file(info, "entities_file", self.entities_file, read_presidio_entities,
                                    "an existing, valid entity table")
        return self


# ----------------------------------------------------------------------------- answers

#: What the stages label their LLM calls with (``purpose``; the call log, ``answers``).
PURPOSES = ("questions", "code turn", "test turn", "codexleaks prompts", "codebreaker prompts", "prefix probe", "judge",
            "cli")


class Answers(_Strict):
    """What an LLM answer must be to count as one (testleak/llm/answers.py), per purpose
    (:data:`PURPOSES`): ``whole``: the purposes whose answer cut by ``max_tokens`` is a failure
    (for the others a cut answer is data, its ``finish_reason`` recorded, unless the purpose's
    reader finds no answer in it); ``max_chars``: the
    largest answer per purpose (``default`` for the others); ``max_candidates_per_response``: the
    candidates the candidates stage keeps of one response (the others counted)."""
    whole: list[str] = Field(default_factory=list)
    max_chars: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: {"default": 65536, "judge": 4096})
    max_candidates_per_response: int = Field(default=200, ge=1)

    @model_validator(mode="after")
    def _purposes(self):
        bad = [p for p in self.whole if p not in PURPOSES]
        if bad:
            raise _rule("whole", bad, f"purposes of LLM calls ({', '.join(PURPOSES)})")
        if "default" not in self.max_chars:
            raise _rule("max_chars", self.max_chars, "a mapping with a 'default' entry (characters)")
        bad = [p for p in self.max_chars if p != "default" and p not in PURPOSES]
        if bad:
            raise _rule("max_chars", bad, f"'default' or purposes of LLM calls ({', '.join(PURPOSES)})")
        return self

    def max_chars_for(self, purpose: str | None) -> int:
        return self.max_chars.get(purpose or "", self.max_chars["default"])


# ----------------------------------------------------------------------------- budget

class Budget(_Strict):
    """Spending cap of the experiment's LLM calls (null: no cap); see testleak/llm/budget.py."""
    usd: float | None = Field(default=None, gt=0)
    completion_tokens: int | None = Field(default=None, ge=1)


# ----------------------------------------------------------------------------- root

class Settings(_Strict):
    taxonomy: Taxonomy
    model: LLM
    judge: LLM
    questioner: LLM
    experiment: Experiment
    ablation: AblationFlags
    verifier: Verifier
    review: Review
    library: Library
    baselines: Baselines
    canary: Canary | None = None   # composed by the canary experiments only (conf/experiment/canary*.yaml)
    presidio: Presidio
    seed: int
    max_error_share: float = Field(ge=0, le=1)
    budget: Budget = Field(default_factory=Budget)
    answers: Answers = Field(default_factory=Answers)
    # written by the composition's resolver (testleak.config, conf/config.yaml): the schema it passed
    validated_by: str | None = None

    @model_validator(mode="after")
    def _cross(self):
        if self.experiment.canary and self.canary is None:
            raise _rule("canary", None, "the canary group (conf/canary/: the experiment runs the canary stages; "
                        "compose it in the experiment's defaults: - /canary@_global_.canary: default)")
        for r, run in self.experiment.runs.items():
            m = self.model if run.model_params == "model" else self.experiment.models.get(
                run.model_params.removeprefix("experiment.models."))
            if m is None or m.name != run.model:
                raise _rule(f"experiment.runs.{r}.model", run.model,
                            f"the name of the model config at {run.model_params} "
                            f"({m.name if m else 'no such key'}): recompose params.yaml with `testleak params`")
        if self.taxonomy._data is None:   # a stage loading params.yaml: checked at composition
            return self._cross_models()
        bad = [s for s in self.experiment.scenarios if s not in self.taxonomy.scenarios]
        if bad:
            raise _rule("experiment.scenarios", bad,
                        f"scenario keys of the taxonomy ({', '.join(self.taxonomy.scenarios)})")
        for entity, attr in (self.presidio.entities or {}).items():
            if attr is not None and attr not in self.taxonomy.attributes:
                raise _rule(f"presidio.entities.{entity}", attr, "an attribute of the taxonomy, or null (unmapped)")
        return self._cross_models()

    def _cross_models(self):
        if self.library.division.models is None:   # a stage loading params.yaml: checked at composition
            return self._cross_budget()
        ref = self.baselines.codexleaks.filter.reference
        if ref != "zlib" and ref not in self.library.division.models:
            raise _rule("baselines.codexleaks.filter.reference", ref,
                        f"zlib or a key of the scorer models (library.division.models_file) ({', '.join(self.library.division.models)})")
        bmi = self.baselines.codexleaks.filter.blind_mi
        if bmi.scorer is not None and bmi.scorer not in self.library.division.models:
            raise _rule("baselines.codexleaks.filter.blind_mi.scorer", bmi.scorer,
                        f"null or a key of the scorer models (library.division.models_file) ({', '.join(self.library.division.models)})")
        if bmi.nonmembers == "generated" and bmi.scorer is None:
            raise _rule("baselines.codexleaks.filter.blind_mi.scorer", None,
                        "a key of the scorer models (library.division.models_file) whose GGUF is the target model (nonmembers: generated "
                        f"scores its generated non-members with it): {', '.join(self.library.division.models)}")
        return self._cross_budget()

    def _cross_budget(self):
        if self.budget.usd is not None:
            for role in ("questioner", "model", "judge"):
                m = getattr(self, role)
                if m.price is None:
                    raise _rule("budget.usd", self.budget.usd,
                                f"a price for every model it caps: {role} {m.name!r} has price null (set "
                                f"{role}.price in conf/{role}/{m.name}.yaml or remove budget.usd)")
        return self
