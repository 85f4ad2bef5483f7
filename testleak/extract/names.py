"""Given names, for a person's full name that no key names (``new Payment("Ann Lee", ...)``).

The lists come from Faker (the library the canaries come from; no hand-kept list): the given
names and surnames of its person providers for the locales below, and its English lorem words
as the common words a label is made of. A value with no key is read as a ``name`` when it has
a person's name shape (:func:`.keys.person_name_shape`) of 2-4 Latin-script words, its first
word is a given name that is no common word, and no later word is a common word unless it is
also a surname: "Jordan Lee" and "Ilse White" are names; "Edit Player Details" (``Edit`` is a
Swedish given name), "May Day" and "Harbour Street" are not.
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache

from .keys import person_name_shape

# Latin-script locales plus romanized Chinese given names ("Jun Qiao")
LOCALES = ("en_US", "en_GB", "en_IN", "hi_IN", "de_DE", "fr_FR", "es_ES", "es_MX", "it_IT", "pt_BR",
           "nl_NL", "pl_PL", "sv_SE", "tr_TR")


@lru_cache(maxsize=1)
def _lists() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(given names, surnames, common English words) as Faker has them."""
    given: set[str] = set()
    surnames: set[str] = set()
    for loc in LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{loc}").Provider
        given.update(n for n in provider.first_names if n[:1].isupper() and n.isalpha())
        surnames.update(n for n in provider.last_names if n[:1].isupper())
    zh = importlib.import_module("faker.providers.person.zh_CN").Provider
    given.update(zh.first_romanized_names)
    surnames.update(zh.last_romanized_names)
    common = importlib.import_module("faker.providers.lorem.en_US").Provider.word_list
    return frozenset(given), frozenset(surnames), frozenset(common)


_CAMEL = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+){1,2}$")


def camel_full_name(value: str) -> bool:
    """A full name written as one CamelCase word (``InesMoreau``): its parts, split
    at the capitals, are a full name (:func:`is_full_name`)."""
    return bool(_CAMEL.match(value)) and is_full_name(" ".join(re.findall(r"[A-Z][a-z]+", value)))


def _common(word: str, common: frozenset[str]) -> bool:
    w = word.lower().rstrip(".")
    return w in common or (w.endswith("s") and w[:-1] in common)


def is_full_name(value: str) -> bool:
    """2-4 capitalised Latin-script words whose first is a given name (``Jana Quell``,
    ``Marta Oyelaran Bastián``); one word alone is too often a thing (``Summer``, ``Grant``)."""
    words = value.split()
    if not 2 <= len(words) <= 4 or any(ord(c) >= 0x0530 for c in value) or not person_name_shape(value):
        return False
    _, surnames, common = _lists()
    return (is_given_name(words[0].rstrip("."))
            and not any(_common(w, common) and w not in surnames for w in words[1:]))


def is_given_name(value: str) -> bool:
    """One capitalised word that is a given name and no common English word (``Alice``, not
    ``Summer``)."""
    given, _, common = _lists()
    return value in given and not _common(value, common)
