"""conf/taxonomy/: the taxonomy's name and its data file (categories, attributes, scenarios),
read and checked at composition."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, PrivateAttr, ValidationError, model_validator

from ..errors import ConfigError
from ..resources_io import load_taxonomy_file
from ._base import _Strict, _data_file
from .messages import _Rule, _fmt, _rule


class Attribute(_Strict):
    category: str
    label: str
    slot: str
    description: str
    lexicon: list[str] = Field(min_length=1)
    lexicon_i18n: list[str] = Field(default_factory=list)


class Scenario(_Strict):
    domain: str
    title: str
    attributes: list[str] = Field(min_length=1)

def read_taxonomy(file: str, root: Path) -> dict:
    """The checked data of a taxonomy file (:func:`load_taxonomy_file`, then :class:`TaxonomyData`);
    :class:`ConfigError` with one line naming the file and the first problem."""
    raw = load_taxonomy_file(file, root)
    try:
        TaxonomyData.model_validate(raw)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = [str(x) for x in err["loc"]]
        exc = (err.get("ctx") or {}).get("error")
        what = (f"{'.'.join(loc + [exc.key])} = {_fmt(exc.value)}: expected {exc.expected}"
                if isinstance(exc, _Rule) else f"{'.'.join(loc)}: {err['msg']}")
        raise ConfigError(f"taxonomy file {file}: {what}") from None
    return raw


class TaxonomyData(_Strict):
    categories: list[str] = Field(min_length=1)
    attributes: dict[str, Attribute] = Field(min_length=1)
    scenarios: dict[str, Scenario] = Field(min_length=1)

    @model_validator(mode="after")
    def _refs(self):
        for k, a in self.attributes.items():
            if a.category not in self.categories:
                raise _rule(f"attributes.{k}.category", a.category, f"one of the categories {self.categories}")
        for k, s in self.scenarios.items():
            bad = [a for a in s.attributes if a not in self.attributes]
            if bad:
                raise _rule(f"scenarios.{k}.attributes", bad, f"attribute keys of taxonomy.attributes")
        return self


class Taxonomy(_Strict):
    """conf/taxonomy/: the taxonomy's ``name`` and its data ``file`` (categories, attributes,
    scenarios; relative to the project root), a DVC dep of every stage that reads it
    (testleak/graph.py). The data is a file, not params: ``dvc exp show`` lists every key of
    params.yaml, and the taxonomy alone made ~115 columns."""
    name: str = Field(min_length=1)
    file: str = Field(min_length=1)
    _data: TaxonomyData | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load(self, info):
        # composition (check_files) reads and checks the file; a stage loading params.yaml does
        # not (only the stages that declare the file as a dep read it: Taxonomy.from_config)
        data = _data_file(info, "file", self.file, read_taxonomy, "an existing, valid taxonomy file")
        if data is not None:
            self._data = TaxonomyData.model_validate(data)
        return self

    @property
    def attributes(self) -> dict:
        return self._data.attributes

    @property
    def scenarios(self) -> dict:
        return self._data.scenarios

    @property
    def categories(self) -> list:
        return self._data.categories
