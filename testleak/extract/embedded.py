"""A value written inside a longer one-line literal: the credential of an ``Authorization``
header (``"Bearer abc123"``), a digest after its algorithm (``"sha256:9f86d0..."``), the value of
a ``"Label: value"`` line (``"Email: ann@corp.io"``), an e-mail address in a longer string
(``"ann@corp.io/8812"``) and the token a sentence states (``"Your temporary password is
3t9y5gP!"``).

:func:`embedded_value` finds the part; the candidates step classifies it under the label
(or, for a header, under the literal's own key) and reports it instead of the whole string,
so that the value a search and a reviewer see is the private part, not its wrapping.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from ..formats import is_email
from ..formats.secrets import AUTH_HEADER
from ..taxonomy import normalize_identifier
from .detect import CREDENTIALS, LABEL_WORDS
from .literals import Literal
from .multivalue import part_span

if TYPE_CHECKING:
    from .detect import Detector

_SNAKE = r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # an identifier in snake case: display_name, DB_PASSWORD
# the label may name alternatives: "Authentication PIN/Token: 730516", "Account/User Name: x"
# or be an identifier: "billingAddress: ...", "display_name: ..."; a quoted value is its inside
_LABELLED = re.compile(rf"^(?P<k>{LABEL_WORDS}(?:/[^\W\d_]+(?: [^\W\d_]+)?){{0,2}}|{_SNAKE})"
                       rf"\s*[:=]\s*(?P<q>['\"]?)(?P<v>\S+(?: \S+){{0,4}}?)(?P=q)$")
# an identifier with an underscore and its value inside a label's value: "DB_PASSWORD: x", "db_pass=x"
_NAMED = re.compile(r"^[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\s*[:=]\s*(?P<v>\S+(?: \S+){0,3})$")
# "... temporary password is 3t9y5gP!", "Your API key is: sk_live_..." (the last words before "is")
_STATED = re.compile(r"(?P<k>(?:[^\W\d_]+[ _-]){0,2}[^\W\d_]+)\s+(?:is|was|=)\s*:?\s+(?P<v>\S+?)[.,;:]?$")


# a digest written with its algorithm: "sha256:9f86d0...", "md5$5f4dcc..." (the value is the digest)
_DIGEST = re.compile(r"^(?:sha1|sha224|sha256|sha384|sha512|sha3-256|md5|blake2[bs]?)[:$](?P<v>[A-Za-z0-9+/=_-]{6,})$", re.I)


# an address inside a longer string: "jane@corp.io/9876543210", "Ann Lee <ann@corp.io>",
# "mailto:ann@corp.io" (never the user@host of a URL: "https://bob:pw@db.io", "git@host:repo")
_EMAIL_IN = re.compile(r"(?:^|(?<=[\s<(\[,;\"'=])|(?<=mailto:))(?P<v>[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,})"
                       r"(?=$|[\s>)\],;/?]|\.(?:$|\s))")


class Embedded(NamedTuple):
    label: str | None  # the words naming the value; None: the literal's own key names it
    value: str
    offset: int  # where ``value`` starts in the literal
    any_attribute: bool = False  # with label None: any attribute of the whole literal (a digest), else a credential


def embedded_value(literal: str) -> Embedded | None:
    """The value inside a one-line ``literal`` of one of the forms above, or None."""
    if "\n" in literal or len(literal) > 200:
        return None
    lead = len(literal) - len(literal.lstrip())
    s = literal.strip()
    h = AUTH_HEADER.match(s)
    if h:  # any credential, however short ("Bearer ya29."): the value is the part after the scheme
        return Embedded(None, h.group("cred"), lead + h.start("cred"))
    d = _DIGEST.match(s)
    if d:
        return Embedded(None, d.group("v"), lead + d.start("v"), any_attribute=True)
    m = _EMAIL_IN.search(s) if "@" in s else None
    if m and m.group("v") != s and not is_email(s):
        return Embedded("email", m.group("v"), lead + m.start("v"))
    m = _LABELLED.match(s)
    if m:
        inner = _NAMED.match(m.group("v"))  # "Password: DB_PASSWORD: x": the value the name holds
        at = m.start("v") + (inner.start("v") if inner else 0)
        return Embedded(m.group("k"), inner.group("v") if inner else m.group("v"), lead + at)
    m = _STATED.search(s)
    if m and any(not c.isalpha() for c in m.group("v")):
        return Embedded(m.group("k"), m.group("v"), lead + m.start("v"))
    return None


def label_keys(label: str) -> list[str]:
    """The identifiers a label may stand for, longest first (``Your temporary password`` ->
    ``your_temporary_password``, ``temporary_password``, ``password``); an identifier
    (``billingAddress``, ``display_name``) stands for itself, read as a key is."""
    label = label.strip()
    if re.fullmatch(rf"{_SNAKE}|[a-z]+(?:[A-Z][a-z0-9]*)+", label):
        return [normalize_identifier(label)]  # an identifier (billingAddress): the key as the code names it
    words = re.split(r"[\s_/-]+", label.lower())
    return ["_".join(words[i:]) for i in range(len(words))]


def classify_embedded(det: "Detector", lit: Literal) -> tuple[Literal, tuple[str, str, dict]] | None:
    """The embedded value of ``lit`` as its own literal with its classification, or None
    (then the whole literal is classified as before). A header's credential takes the
    literal's key (or, unkeyed, the attribute the whole header's shape gives); a labelled or
    stated value takes the attribute its label names, and nothing when the label names none."""
    emb = embedded_value(lit.value)
    if emb is None:
        return None
    s, e, _ = part_span(lit, lit.value, emb.offset, emb.value)
    if emb.label is None:
        whole = det.classify_detailed(lit.value, lit.key)
        if whole is None or (whole[0] not in CREDENTIALS and not emb.any_attribute):
            return None
        own = det.classify_detailed(emb.value, lit.key)
        return Literal(emb.value, lit.key, s, e, lit.cut), own if own is not None and own[0] == whole[0] else whole
    key = next((k for k in label_keys(emb.label) if det.attribute_for_key(k) is not None), None)
    hit = det.classify_detailed(emb.value, key) if key else None
    return (Literal(emb.value, key, s, e, lit.cut), hit) if hit is not None else None
