"""Privacy taxonomy (paper Table 1): categories, attributes, scenarios and lexicons.

The data lives in conf/taxonomy/*.yaml and reaches stages through params.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from .errors import ConfigError


@dataclass(frozen=True)
class Attribute:
    key: str
    category: str
    label: str
    slot: str
    description: str
    lexicon: tuple[str, ...]


@dataclass(frozen=True)
class Scenario:
    key: str
    domain: str
    title: str
    attributes: tuple[str, ...]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def normalize_identifier(name: str) -> str:
    """``contactEmail`` / ``contact-email`` / ``CONTACT_EMAIL`` -> ``contact_email``."""
    s = _CAMEL.sub("_", name)
    return "_".join(p for p in _SPLIT.split(s) if p).lower()


@dataclass(frozen=True)
class Taxonomy:
    attributes: dict[str, Attribute]
    scenarios: dict[str, Scenario]
    categories: tuple[str, ...] = field(default=("identifiable", "private", "secret"))

    @classmethod
    def from_config(cls, cfg) -> "Taxonomy":
        t = cfg["taxonomy"] if "taxonomy" in cfg else cfg
        attrs = {
            k: Attribute(k, v["category"], v["label"], v["slot"], v["description"], tuple(v["lexicon"]))
            for k, v in t["attributes"].items()
        }
        scen = {
            k: Scenario(k, v["domain"], v["title"], tuple(v["attributes"]))
            for k, v in t["scenarios"].items()
        }
        for s in scen.values():
            for a in s.attributes:
                if a not in attrs:
                    raise ConfigError(f"scenario {s.key!r} names unknown attribute {a!r}; known: {sorted(attrs)}")
        return cls(attrs, scen, tuple(t.get("categories", cls.categories)))

    def attribute(self, key: str) -> Attribute:
        try:
            return self.attributes[key]
        except KeyError:
            raise ConfigError(f"unknown attribute {key!r}; known: {', '.join(self.attributes)}") from None

    def scenario(self, key: str) -> Scenario:
        try:
            return self.scenarios[key]
        except KeyError:
            raise ConfigError(f"unknown scenario {key!r}; known: {', '.join(self.scenarios)}") from None

    def category_of(self, attr: str) -> str:
        return self.attribute(attr).category

    def by_category(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {c: [] for c in self.categories}
        for a in self.attributes.values():
            out.setdefault(a.category, []).append(a.key)
        return out

    @cached_property
    def _lexicon_index(self) -> dict[str, str]:
        idx: dict[str, str] = {}
        for a in self.attributes.values():
            for w in a.lexicon:
                idx.setdefault(normalize_identifier(w), a.key)
        return idx

    def attribute_for_name(self, name: str) -> str | None:
        """Map an identifier (key, parameter, variable, attribute access) to an attribute.

        Exact lexicon entries win; otherwise the longest lexicon entry that is a whole
        ``_``-separated suffix of the identifier (``customer_email`` -> email).
        """
        n = normalize_identifier(name)
        if not n:
            return None
        idx = self._lexicon_index
        if n in idx:
            return idx[n]
        parts = n.split("_")
        for i in range(1, len(parts)):
            tail = "_".join(parts[i:])
            if tail in idx:
                return idx[tail]
        return None
