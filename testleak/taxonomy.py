"""Privacy taxonomy (paper Table 1): categories, attributes, scenarios and lexicons.

The data lives in conf/taxonomy/*.yaml and reaches stages through params.yaml.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
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
    # the same names in other languages (Chinese, German, French, Spanish); also matched at
    # the end of a compound word (登录密码 -> 密码, Benutzerpasswort -> passwort)
    lexicon_i18n: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    key: str
    domain: str
    title: str
    attributes: tuple[str, ...]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[\W_]+")
_COMPOUND_MIN = 5  # shortest Latin-script entry matched at the end of a compound word


def normalize_identifier(name: str) -> str:
    """``contactEmail`` / ``contact-email`` / ``CONTACT_EMAIL`` -> ``contact_email``;
    letters of any script are kept, accents folded (``contraseña`` -> ``contrasena``)."""
    s = _CAMEL.sub("_", name)
    if not s.isascii():
        s = "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))
    return "_".join(p for p in _SPLIT.split(s) if p).lower()


def taxonomy_data(cfg, root: Path | None = None) -> dict:
    """The taxonomy's data (categories, attributes, scenarios) of the composed params: the file
    ``taxonomy.file`` names, read relative to ``root`` (default: the project root). ``cfg`` may
    also be the ``taxonomy`` group itself or the data."""
    t = cfg["taxonomy"] if "taxonomy" in cfg else cfg
    if "file" in t and "attributes" not in t:
        from .config import project_root
        from .settings import read_taxonomy

        return read_taxonomy(t["file"], root or project_root())
    return t


@dataclass(frozen=True)
class Taxonomy:
    attributes: dict[str, Attribute]
    scenarios: dict[str, Scenario]
    categories: tuple[str, ...] = field(default=("identifiable", "private", "secret"))

    @classmethod
    def from_config(cls, cfg, root: Path | None = None) -> "Taxonomy":
        """The taxonomy of the composed params (``taxonomy.file``, read relative to ``root``,
        default the project root), of a ``{name, file}`` mapping, or of the data itself (the
        taxonomy file's content)."""
        t = taxonomy_data(cfg, root)
        attrs = {
            k: Attribute(k, v["category"], v["label"], v["slot"], v["description"], tuple(v["lexicon"]),
                         tuple(v.get("lexicon_i18n") or ()))
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
            for w in a.lexicon + a.lexicon_i18n:
                idx.setdefault(normalize_identifier(w), a.key)
        return idx

    @cached_property
    def _compound_index(self) -> list[tuple[str, str]]:
        """Other-language entries matched as word endings, longest first."""
        out = {normalize_identifier(w): a.key for a in self.attributes.values() for w in a.lexicon_i18n}
        return sorted(((w, k) for w, k in out.items() if w and "_" not in w and (not w.isascii() or len(w) >= _COMPOUND_MIN)),
                      key=lambda t: -len(t[0]))

    def is_field_name(self, value: str) -> bool:
        """True when ``value`` is itself a compound field name of some attribute's lexicon
        (``new_password``, ``user_name``): an identifier, not data. Single words
        (``pass``, ``admin``) stay values: they are real weak passwords and user names."""
        n = normalize_identifier(value)
        return "_" in n and n in self._lexicon_index

    def attribute_for_name(self, name: str) -> str | None:
        """Map an identifier (key, parameter, variable, attribute access) to an attribute.

        Exact lexicon entries win; otherwise the longest lexicon entry that is a whole
        ``_``-separated suffix of the identifier (``customer_email`` -> email); otherwise
        the longest other-language entry that ends the identifier's last word (compound
        words: ``登录密码`` -> password, ``Benutzerpasswort`` -> password).
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
        last = parts[-1]
        for w, k in self._compound_index:
            if len(w) < len(last) and last.endswith(w):
                return k
        return None
