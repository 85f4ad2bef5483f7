"""Which attribute an identifier names, matched on whole identifier tokens with the
attribute's role (ExtractPII's key lexicon step).

``KeyIndex(taxonomy).resolve(key) -> (attribute, how) | None``, ``how`` one of ``exact`` (a lexicon
entry), ``head`` (an entry ends the key and the tokens before give it the role: ``customer_name``,
not ``database_name``), ``token`` (a token only one attribute's lexicon uses) and ``typo`` (one
misspelt token of 5+ letters, same first letter: ``pasword``). For secrets, e-mail and phone any
owner is fine; for the other attributes every qualifier must be a role word (:data:`ROLE_WORDS`) or
from that attribute's lexicon or domain. Dunder names name nothing, and a bare ``name`` names a
person only when the value has a person's name shape (:func:`person_name_shape`).
"""

from __future__ import annotations

import re

from ..taxonomy import Taxonomy, normalize_identifier
from .literals import TRANSFORMED_KEY

# attributes whose owner may be anything: secrets of a service are still secrets
ROLE_FREE = frozenset({"password", "auth_token", "secret_key", "credit_card", "username", "email", "phone"})

# qualifiers that keep a personal attribute personal: people and their roles, name parts,
# postal kinds, and modifiers tests put before any field
ROLE_WORDS = frozenset("""
user users customer client employee staff member person people patient student teacher doctor physician nurse
author owner holder cardholder account contact recipient sender applicant candidate guest passenger buyer seller
tenant landlord driver manager admin parent child father mother spouse partner beneficiary friend player subscriber
citizen voter resident traveler traveller attendee participant speaker reviewer reporter worker agent consumer
shopper visitor pupil individual family emergency kin human profile signup registration personal private
full first last given middle sur fore nick display preferred legal real maiden birth
billing shipping mailing home work office postal delivery residential street permanent physical
primary secondary alternate alt my your his her their our new old current previous prev default valid invalid
expected actual sample test fake mock example input raw original updated masked plain encrypted hashed clean
normalized formatted submitted stored saved target other another
set get is has with validate check verify parse format normalize update add create make build fetch find lookup
load save store read write mask by as for
""".split())

# role words that say nothing about whose value it is (``expected_names`` is as ambiguous
# as ``names``)
MODIFIERS = frozenset("""
primary secondary alternate alt my your his her their our new old current previous prev default valid invalid
expected actual sample test fake mock example input raw original updated masked plain encrypted hashed clean
normalized formatted submitted stored saved target other another set get is has with validate check verify parse
format normalize update add create make build fetch find lookup load save store read write mask by as for
""".split())


def without_modifiers(normalized: str) -> str:
    """A normalized identifier without its :data:`MODIFIERS` tokens (``expected_names`` -> ``names``)."""
    parts = [t for t in normalized.split("_") if t not in MODIFIERS]
    return "_".join(parts) or normalized


# free-text carriers: the qualifier says whose text it is (``medical_history``)
CARRIERS = frozenset("""
number num no nr id code card date info information data details detail value text string str record records history
histories notes note observations observation summary description remarks remark comments comment report reports
findings status list
""".split())

# tokens too generic to name an attribute on their own (they occur in one attribute's
# lexicon only by accident of composition: ``date`` of date_of_birth, ``key`` of api_key)
GENERIC = frozenset("""
e of to from data date details db hash key line line1 new old print type view phrase scan template record work home
first last full given family display social security national private seed sort voice face palm credit reply
preference verification encryption signing refresh session auth api aws admin client customer owner holder person
player driver citizen author screen emirates tax billing shipping mailing postal blood wallet address1 license
licence cell pass mail party handle balance statement transaction condition conditions born vote voting login
state rate heart pulse signs vital
""".split())

# domain words of free-text attributes that their lexicons do not spell out
DOMAIN = {
    "medical_record": frozenset("""clinical clinic hospital symptom vital vitals therapy lab surgery surgical
                                   psychiatric mental dental immunization vaccination vaccine patient doctor""".split()),
}

_PARTICLES = frozenset("van von der de da del di du la le bin ibn al el dos das ten ter".split())
_WORD = re.compile(r"^(?:[^\W\d_][^\W\d_]*\.?)$", re.U)


def person_name_shape(value: str) -> bool:
    """1-5 words, each capitalised letters (``Ann``, ``O'Neil``, ``Jean-Luc``, ``J.``;
    particles such as ``van`` inside), or one word of an uncased script (``张伟``)."""
    words = value.strip().split()
    if not 1 <= len(words) <= 5:
        return False
    for i, w in enumerate(words):
        if w.lower() in _PARTICLES and 0 < i < len(words) - 1:
            continue
        parts = re.split(r"['’\-]", w)
        if not all(parts) or not all(_WORD.match(p) for p in parts):
            return False
        first = w[0]
        if first.lower() == first.upper():  # uncased script
            continue
        if not first.isupper() or any(c.isupper() for c in parts[0][1:]):
            return False
        if len(words) == 1 and len(w.rstrip(".")) < 2:
            return False
    return True


# calls that make their value from the argument (generate_token("user1"), get_email(uid)), and
# what a call makes of its argument (generatePasswordHash("pw") hashes a password)
PRODUCERS = frozenset("generate gen random issue compute derive calculate get fetch".split())
DERIVED = frozenset("hash hashed digest strength score checksum signature encryption length".split())


# calls whose argument is the text that asks a person for the value
PROMPTS = frozenset({"input", "raw_input", "getpass", "prompt", "askstring", "readline", "question"})

# The parameters of well-known library calls that take credentials positionally, for calls whose
# definition neither the answer nor the code under test holds (theirs win): smtplib / ftplib /
# imaplib ``login(user, password)``, JDBC ``DriverManager.getConnection(url, user, password)``,
# requests' ``HTTPBasicAuth`` / ``HTTPDigestAuth``, aiohttp's ``BasicAuth``, .NET's
# ``NetworkCredential``, java.net's ``PasswordAuthentication``, Apache HttpClient's
# ``UsernamePasswordCredentials``, PHP's ``mysqli_connect`` and ``PDO``.
LIBRARY_SIGNATURES: dict[str, list[str]] = {
    "login": ["user", "password"],
    "getConnection": ["url", "user", "password"],
    "HTTPBasicAuth": ["username", "password"],
    "HTTPDigestAuth": ["username", "password"],
    "BasicAuth": ["login", "password"],
    "NetworkCredential": ["userName", "password"],
    "PasswordAuthentication": ["userName", "password"],
    "UsernamePasswordCredentials": ["userName", "password"],
    "mysqli_connect": ["host", "username", "password", "database"],
    "PDO": ["dsn", "username", "password"],
}


def callee_arg_key(callee: str | None, attr_for, bound: str | None = None) -> str | None:
    """The key of a call's sole argument: the callee when it names an attribute
    (``validate_email("v")``); the field after ``by`` (``find_user_by_email``) or before a
    derived noun (``password_hash``, ``GenerateSecurePasswordHash``); no key when the callee
    produces the attribute from its argument (``generate_token("user1")``: nor does the name
    the call is bound to name the argument) nor when it asks for the value (:data:`PROMPTS`);
    else ``bound``, the name the call is bound to."""
    if not callee:
        return bound
    if callee in PROMPTS:
        return None  # password = input("Enter your password: "): the text asks for the value
    parts = normalize_identifier(callee).split("_")
    if "by" in parts[:-1]:
        field = "_".join(parts[parts.index("by") + 1:])
        return field if attr_for(field) else bound
    derived = len(parts) > 1 and parts[-1] in DERIVED
    if derived:
        parts = parts[:-1]
    if len(parts) > 1 and parts[0] in PRODUCERS:
        if not derived:
            return None if attr_for("_".join(parts[1:])) else bound
        parts = parts[1:]
    field = "_".join(parts) if derived else callee
    return field if attr_for(field) else bound


# what a call returns when its name says it transforms its input (hash_password(p) is no password)
_TRANSFORMS = frozenset("hash hashed encrypt encrypted encode encoded digest mask masked sign signed".split())


_PRODUCERS = frozenset("generate gen create make new issue build compute derive random".split())


def produces(name: str) -> bool:
    """The identifier names what it makes (``GenerateSecureToken``, ``create_password``): its
    name is its output's attribute, not its input's."""
    return normalize_identifier(name).split("_")[0] in _PRODUCERS


def transforms(name: str) -> bool:
    """The identifier says it transforms its input or holds a transform's output."""
    return bool(_TRANSFORMS & set(normalize_identifier(name).split("_")))


def compared_name_key(name: str | None) -> str | None:
    """The key of a name a literal is compared with: the name, or
    :data:`.literals.TRANSFORMED_KEY` when it says it holds a transform's output
    (``encryptedPassword == "F3B3..."``: derived data)."""
    if name and transforms(name):
        return TRANSFORMED_KEY
    return name


def result_key(callee: str | None) -> str | None:
    """The key of the value a call returns, when compared to a literal: the callee's name
    (``generate_token(u) == "v"``: a token); :data:`.literals.TRANSFORMED_KEY` for a
    transform of its input (``hash_password(p) == "5f4d..."``: derived data)."""
    if not callee:
        return None
    if transforms(callee):
        return TRANSFORMED_KEY
    return callee


def _osa1(a: str, b: str) -> bool:
    """Optimal string alignment distance of exactly 1 (one edit or one adjacent swap)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    s, t = (a, b) if len(a) < len(b) else (b, a)
    return any(t[:i] + t[i + 1:] == s for i in range(len(t)))


class KeyIndex:
    """Token-level key lexicon of one taxonomy (module docstring)."""

    def __init__(self, taxonomy: Taxonomy):
        self.taxonomy = taxonomy
        self.exact: dict[str, str] = {}
        tokens: dict[str, set[str]] = {}
        self.own: dict[str, set[str]] = {}
        for a in taxonomy.attributes.values():
            for w in a.lexicon + a.lexicon_i18n:
                n = normalize_identifier(w)
                self.exact.setdefault(n, a.key)
                for t in n.split("_"):
                    self.own.setdefault(a.key, set()).add(t)
                    if w in a.lexicon:
                        tokens.setdefault(t, set()).add(a.key)
        self.distinctive = {t: next(iter(v)) for t, v in tokens.items()
                            if len(v) == 1 and t not in GENERIC and len(t) >= 2}
        # domain words qualify a carrier (clinical_notes) but name nothing alone (lab)
        self.qualifying = dict(self.distinctive)
        for a, words in DOMAIN.items():
            if a in taxonomy.attributes:
                self.own.setdefault(a, set()).update(words)
                for t in words:
                    self.qualifying.setdefault(t, a)
        self.known = set(tokens) | ROLE_WORDS | CARRIERS
        self._ignore_roles = False
        self._cache: dict[tuple[str, bool], tuple[str, str] | None] = {}
        self.spellable = sorted(t for t in self.distinctive if len(t) >= 5 and t.isascii())
        self._deletes: dict[str, set[str]] = {}  # a word with one letter deleted -> the words
        for w in self.spellable:
            for d in {w[:i] + w[i + 1:] for i in range(len(w))} | {w}:
                self._deletes.setdefault(d, set()).add(w)

    def _role_ok(self, attr: str, qualifiers: list[str]) -> bool:
        if attr in ROLE_FREE or self._ignore_roles:
            return True
        own = self.own.get(attr, set())
        return all(q in ROLE_WORDS or q in own or q.isdigit() for q in qualifiers)

    def _match(self, parts: list[str]) -> tuple[str, str] | None:
        n = "_".join(parts)
        if n in self.exact:
            return self.exact[n], "exact"
        for i in range(1, len(parts)):
            tail = "_".join(parts[i:])
            if tail in self.exact:
                a = self.exact[tail]
                q = parts[:i]
                d = [self.distinctive[t] for t in q if t in self.distinctive]
                if d and d[-1] != a and "_" not in tail and tail in CARRIERS:
                    a = d[-1]  # identity_card: the qualifier says whose card
                    q = [t for t in q if self.distinctive.get(t) != a]
                return (a, "head") if self._role_ok(a, q) else None
        last = parts[-1]
        if last in self.distinctive:
            a = self.distinctive[last]
            return (a, "token") if self._role_ok(a, parts[:-1]) else None
        if last in CARRIERS and len(parts) > 1:
            for i in range(len(parts) - 2, -1, -1):
                a = self.qualifying.get(parts[i])
                if a is not None:
                    rest = parts[:i] + parts[i + 1:-1]
                    return (a, "token") if self._role_ok(a, rest) else None
        return None

    def _respell(self, t: str) -> str | None:
        if t in self.known or len(t) < 5 or not t.isascii() or t.endswith(("ed", "ing")):
            return None
        near = set(self._deletes.get(t, ()))
        for d in {t[:i] + t[i + 1:] for i in range(len(t))}:
            near |= self._deletes.get(d, set())
        hits = [w for w in sorted(near) if w[0] == t[0] and _osa1(t, w) and (len(t) >= 6 or len(w) == len(t) and sorted(w) == sorted(t))]
        return hits[0] if len(hits) == 1 else None

    def names_thing(self, key: str | None) -> bool:
        """True for a dunder name or a key whose lexicon word another token turns into the
        name of a thing (``op_name``, ``server_address``): its value is no keyless value."""
        if not key:
            return False
        if key.startswith("__") and key.endswith("__"):
            return True
        if self.resolve(key) is not None:
            return False
        self._ignore_roles = True
        try:
            return self.resolve(key) is not None
        finally:
            self._ignore_roles = False

    def resolve(self, key: str | None) -> tuple[str, str] | None:
        """``(attribute, how)`` for an identifier, or None (module docstring)."""
        ck = (key or "", self._ignore_roles)
        if ck not in self._cache:
            if len(self._cache) > 50_000:
                self._cache.clear()
            self._cache[ck] = self._resolve(key)
        return self._cache[ck]

    def _resolve(self, key: str | None) -> tuple[str, str] | None:
        if not key or (key.startswith("__") and key.endswith("__")):
            return None
        n = normalize_identifier(key)
        if not n:
            return None
        parts = n.split("_")
        hit = self._match(parts)
        if hit is None and n.isascii():
            i18n = self.taxonomy.attribute_for_name(key)  # compound words of other languages
            if i18n is not None and "_" not in n:
                return i18n, "exact"
            fixed = [self._respell(t) or t for t in parts]
            if fixed != parts:
                hit = self._match(fixed)
                return (hit[0], "typo") if hit else None
        elif hit is None:
            a = self.taxonomy.attribute_for_name(key)
            return (a, "exact") if a else None
        return hit
