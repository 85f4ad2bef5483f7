"""CodexLeaks prompt templates as data (testleak/resources/codexleaks.yaml) and their slot filling.

Method (CodexLeaks, Niu et al. 2023, as summarised in paper Sec. 6.1 / App. A.2): hand-made
prompt styles per privacy attribute - code assignment, JSON, SQL ``INSERT ... VALUES (`` and
comments - whose slots take field labels (English or Chinese), people names, city names and
value prefixes (password prefixes, card IINs, phone country codes, email prefixes). Slots are
written ``{slot}``; a brace that does not enclose a bare word (JSON) is literal text.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Mapping

from ..errors import ConfigError

SLOT = re.compile(r"\{([a-z_]+)\}")
ZH_STYLES = ("json_zh", "comment_zh")
_ATTR_LISTS = ("labels", "labels_zh", "phrases", "tables", "prefixes")
_SHARED_LISTS = ("names", "cities", "objects")


@dataclass(frozen=True)
class Style:
    key: str
    lang: str
    text: str


def fill(template: str, slots: Mapping[str, str]) -> str:
    """Replace every ``{slot}`` of template; an unknown slot is a ConfigError naming it."""

    def sub(m: re.Match) -> str:
        k = m.group(1)
        if k not in slots:
            raise ConfigError(f"template slot {{{k}}} has no value; known slots: {', '.join(sorted(slots))}")
        return slots[k]

    return SLOT.sub(sub, template)


class CodexLeaksTemplates:
    """The template data of codexleaks.yaml, validated."""

    def __init__(self, data: Mapping):
        self.styles = {k: Style(k, v["lang"], v["text"]) for k, v in data["styles"].items()}
        for k in _SHARED_LISTS:
            if not data.get(k):
                raise ConfigError(f"codexleaks resource: shared list `{k}` is missing or empty")
        self.names = list(data["names"])
        self.cities = list(data["cities"])
        self.objects = list(data["objects"])
        self.attributes: dict[str, dict] = {}
        for a, v in data["attributes"].items():
            for k in _ATTR_LISTS:
                if not v.get(k) and k != "prefixes":
                    raise ConfigError(f"codexleaks resource: attribute {a!r} has no `{k}`")
                if k == "prefixes" and not v.get(k):
                    raise ConfigError(f"codexleaks resource: attribute {a!r} has no `prefixes` (use [''] for none)")
            extra = {f"{a}:{i}": Style(f"{a}:{i}", t["lang"], t["text"]) for i, t in enumerate(v.get("templates") or [])}
            self.attributes[a] = {**{k: list(v[k]) for k in _ATTR_LISTS}, "styles": extra}

    def check_covers(self, attributes) -> None:
        missing = [a for a in attributes if a not in self.attributes]
        if missing:
            raise ConfigError(f"codexleaks resource has no templates for attribute(s) {missing}; "
                              f"add them to testleak/resources/codexleaks.yaml")

    def styles_for(self, attribute: str) -> list[Style]:
        return list(self.styles.values()) + list(self.attributes[attribute]["styles"].values())

    def render(self, attribute: str, style: Style, rng: random.Random) -> str:
        """Fill one style for one attribute with slot values drawn from ``rng``."""
        a = self.attributes[attribute]
        slots = {
            "obj": rng.choice(self.objects),
            "name": rng.choice(self.names),
            "city": rng.choice(self.cities),
            "label": rng.choice(a["labels"]),
            "label_zh": rng.choice(a["labels_zh"]),
            "phrase": rng.choice(a["phrases"]),
            "table": rng.choice(a["tables"]),
            "prefix": rng.choice(a["prefixes"]),
        }
        return fill(style.text, slots)

    def sample(self, attribute: str, rng: random.Random, zh_share: float) -> tuple[Style, str]:
        """Pick a style (Chinese ones with probability ``zh_share``) and render it."""
        styles = self.styles_for(attribute)
        zh = [s for s in styles if s.key in ZH_STYLES]
        en = [s for s in styles if s.key not in ZH_STYLES]
        pool = zh if (zh and (not en or rng.random() < zh_share)) else en
        style = rng.choice(pool)
        return style, self.render(attribute, style, rng)
