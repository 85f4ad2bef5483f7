"""conf/library/: the privacy feature library (division scorer, clustering, figures)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from ..errors import ConfigError
from ..resources_io import load_yaml_data
from ._base import _Strict, _data_file
from .messages import _rule
from .models import Gguf


class CausalScorer(_Strict):
    name: str
    family: str | None = None
    dtype: Literal["float32", "bfloat16", "float16"]
    gguf: Gguf


def read_scorer_models(file: str, root: Path) -> dict:
    """The checked scorer models of ``library.division.models_file`` (key -> :class:`CausalScorer`)."""
    raw = load_yaml_data(file, root, "scorer models file")
    bad = []
    for k, v in raw.items():
        try:
            CausalScorer.model_validate(v)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            bad.append(f"{k}.{'.'.join(str(x) for x in err['loc'])}: {err['msg']}")
    if bad or not raw:
        raise ConfigError(f"scorer models file {file}: {'; '.join(bad) or 'no model'}")
    return raw


class Division(_Strict):
    scorer: str
    mlm_path: str | None = None
    quantile: float = Field(gt=0, lt=1)
    value_span: str
    min_fragment_chars: int = Field(ge=1)
    context_lines: int = Field(ge=0)
    max_chars: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    model: str = Field(min_length=1)
    # the scorer models by key: a data file (testleak/resources/scorer_models.yaml), a DVC dep of the
    # stages that load a scorer (testleak/graph.py), read and checked at composition
    models_file: str = Field(min_length=1)
    _models: dict | None = PrivateAttr(default=None)

    @property
    def models(self) -> dict | None:
        """The scorer models by key (None in a stage's load of params.yaml: checked at composition)."""
        return self._models

    @model_validator(mode="after")
    def _known_model(self, info):
        self._models = _data_file(info, "models_file", self.models_file, read_scorer_models,
                                  "an existing, valid scorer models file")
        if self._models is None:
            return self
        if self.model not in self._models:
            raise _rule("model", self.model, f"a key of the scorer models {self.models_file} "
                        f"({', '.join(sorted(self._models))})")
        return self


class Eps(_Strict):
    templates: float = Field(gt=0)
    fragments: float = Field(gt=0)


class Clustering(_Strict):
    encoder: str
    eps: Eps
    min_samples: int = Field(ge=1)
    metric: str
    include_prior: bool
    neutral_slot: str
    min_similarity: float = Field(ge=-1, le=1)


class Figures(_Strict):
    projection: Literal["pca", "tsne"]


class Library(_Strict):
    prior: str = Field(min_length=1)
    division: Division
    clustering: Clustering
    figures: Figures
    torch_threads: int = Field(ge=1)   # fixed: torch's thread split changes float reductions
