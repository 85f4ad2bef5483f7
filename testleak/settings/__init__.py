"""The typed schema of the composed configuration (params.yaml): one model per config group.

Each conf/ group has a strict pydantic model here (one submodule per group): types, ranges,
cross-field rules, unknown keys rejected at every level (also ones added with Hydra's ``+``),
chosen names checked against testleak/registry.py. ``3.7``, ``"ten"`` or ``true`` are not
integers; integers are accepted where a number is expected. :func:`validate` raises
:class:`~testleak.errors.ConfigError` with one line per problem (:mod:`.messages`): the key, the
value, what was expected and where the value came from. ``testleak params`` and
:func:`testleak.config.compose` validate after composing, :func:`testleak.config.load_params`
again when a stage reads params.yaml.
"""

from __future__ import annotations

from ..resources_io import load_taxonomy_file, load_yaml_data, read_presidio_entities
from .baselines import (Baselines, BlindMI, CodeBreaker, CodexLeaks, CodexLeaksFilter, Completion, EntropyCfg,
                        Operators)
from .canary import Canary, CanaryExposure, CanaryPrefixProbe, FileBytes, Finetune
from .experiment import AblationFlags, Experiment, Hints, LibraryFrom, Run, RunBudget, RunPlan
from .library import CausalScorer, Clustering, Division, Eps, Figures, Library, read_scorer_models
from .messages import _known_keys, problems, validate
from .models import LLM, Gguf, Limits, Price, Sampling, Server
from .root import PURPOSES, Answers, Budget, Presidio, Settings
from .taxonomy import Attribute, Scenario, Taxonomy, TaxonomyData, read_taxonomy
from .verifier import (CorpusExclusion, GitHubSearch, InfiniGramSettings, JudgeSettings, LocalSearch, Review,
                       Verifier, Window)

SCHEMA_VERSION = 1

__all__ = ["PURPOSES", "SCHEMA_VERSION", "Answers", "Settings", "problems", "validate"]
