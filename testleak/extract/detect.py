"""Value -> attribute mapping for ExtractPII: non-value filters, key lexicon, value shapes.

:meth:`Detector.classify` maps a literal and its key (or None) to ``(attribute, pattern)`` or None
(paper Sec. 4.2, App. B.2), by precedence: (1) non-values are dropped (format strings, regexes,
slot and obvious placeholders, masked values, field names as values, multi-line text except PEM
keys, > 512 characters), but under a key that names an attribute the weak ones are a test's input
all the same, kept with ``validity`` ``{"ok": False}`` (:data:`KEPT_UNDER_KEY`) for the rules;
(2) self-certifying formats beat any key: email, vendor secret prefixes and PEM keys, check-digit
formats (card, IBAN, Chinese resident ID; Aadhaar and SSN rules are too weak to overrule a key);
(3) a key that maps to an attribute (:class:`.keys.KeyIndex`) decides; a value without the
attribute's shape (:data:`CHECKS`) is kept as invalid, validity is left to the rules and the judge;
(4) weaker shapes, first match wins: SSN, JWT, formatted valid phone, street address and, for
unkeyed values only, a full name, hex64 or a high-entropy token. Dates of birth are never detected
by shape alone.
"""

from __future__ import annotations

import re

from ..formats import (BEARER, CVV, EXPIRY, HEX64, IBAN_SHAPE, PEM, PHONE_REGIONS, birth_date_error, card_digits,
                       is_auth_header, is_email, is_entropy_token, is_formatted_phone, is_iban, is_jwt, is_ssn, national_id,
                       parse_date, parse_phone, vendor_key)
from ..taxonomy import Taxonomy, normalize_identifier
from .keys import KeyIndex, person_name_shape, transforms, without_modifiers
from .names import camel_full_name, is_full_name, is_given_name

# single lexicon words that name things as often as people: the value's shape decides
AMBIGUOUS_BARE = frozenset({"name"})

# --- non-values -----------------------------------------------------------------------
_ALNUM = re.compile(r"[^\W_]", re.U)
_FORMAT = re.compile(r"\{\}|\{\d+\}|\{[A-Za-z_][\w.\[\]]*(?:![rsa])?(?::[^{}]*)?\}|%[-+ #0]*\d*(?:\.\d+)?[sdifrxXeEgGc]\b|\$\{")
_REGEX = re.compile(r"^\^|(?<![\d\s])\$$|\\[dwsbDWSB.]|\[(?:a-z|A-Z|0-9|\^)|\(\?[:=!<P]|\.[*+]|\[\^")
_SLOT = re.compile(r"^<[A-Za-z][\w -]*>$|<[A-Z][A-Z0-9_-]{2,}>")  # <EMAIL>, <Customer Email>, "Bearer <TOKEN>"
LABEL_WORDS = r"[^\W\d_][^\W\d_ ]*(?: [^\W\d_]+){0,3}"  # one to four words naming a value: "User name"
_LABEL = re.compile(rf"^{LABEL_WORDS}\s*:$")  # "Stored:", "User name:"
_MASKED = re.compile(r"\*{3,}|[xX]{4,}|•{3,}")
_ALL_MASK = re.compile(r"^[*•X]{3,}(?:[ ./@-]+[*•X]+)*$")  # "************", "***-**-****": a mask's output
_PLACEHOLDER = re.compile(
    r"(?:^|[^a-z])(?:your|placeholder|replace[-_ ]?me|change[-_ ]?me|insert|dummy|fake|redacted|lorem|todo|tbd)(?:[^a-z]|$)",
    re.I,
)

# the words a placeholder wraps around the attribute it stands for
_FILLER = frozenset("your my the a an here placeholder insert replace me change dummy fake goes actual real "
                    "value example sample".split())
# a date alone (``2023-10-15``, ``2023-10-15 09:00 AM``, ``15/10/2023``) under these keys is a
# transaction or record date, not the statement or the record; a date under a login key
# (last_login = "2021-04-15") is when, not who
DATE_ONLY = re.compile(r"^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[./]\d{1,2}[./]\d{4})(?:[ T]\d{1,2}:\d{2}(?::\d{2})?\s?(?:[AaPp][Mm])?)?$")
_UNDATED = frozenset({"bank_statement", "medical_record", "username"})
_DIGEST = re.compile(r"^[0-9a-fA-F]{32,}$")
_RECORD_ID = re.compile(r"^(?:\d+|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12})$")  # a number or a UUID
# a secret seldom spells out its own kind: three words, one of them naming the secret, are
# a message (a name or an address names its parts: "12 Oak Street" is an address)
CREDENTIALS = frozenset({"password", "auth_token", "secret_key"})
_SLUG = re.compile(r"^[A-Za-z][\w-]*$")

# --- shapes ---------------------------------------------------------------------------
STREET = re.compile(
    r"^\d{1,6}[A-Za-z]?\s+(?:[A-Za-z0-9.'-]+\s+){0,5}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|"
    r"Terrace|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir)\.?(?:[\s,].*)?$",
    re.I,
)
_NAME = re.compile(r"^[^\W\d_][^\W\d_.'’\- ]*(?:[.'’\- ]{1,2}[^\W\d_]+)*\.?$", re.U)
_IDCHARS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ./-]{2,38}[A-Za-z0-9]$")
# loose shapes for keyed values (validity is the format rules' business, not extraction's)
_EMAILISH = re.compile(r"^[^@\s]+@[^@\s]+$")
_PHONEISH = re.compile(r"^\+{0,2}[\d\s().\-/]+(?:\s*(?:x|ext\.?)\s*\d{1,6})?$")
_CARDISH = re.compile(r"^\d[\d \-]{10,24}\d$")
_BICISH = re.compile(r"^[A-Za-z]{6}[A-Za-z0-9]{2}(?:[A-Za-z0-9]{3})?$")


def non_value(v: str, key: str | None = None) -> bool:
    """True for strings that are not privacy values (see the module docstring, rule 1)."""
    return _non_value(v.strip(), key) is not None


_SYMBOL_BRACES = re.compile(r"(?<=[^\w\s])\{\}(?=[^\w\s])")  # "_+{}|" in a run of symbols: no format slot


def _symbols(s: str) -> bool:
    """A run of keyboard symbols (``!@#$%^&*()_+{}``): a test input, not a format string."""
    return len(s) >= 6 and sum(c.isalnum() for c in s) <= 2 and not _REGEX.search(s)


# non-values that are still a test's input when a key names their attribute: kept under
# that key with validity ``{"ok": False, "reason"}`` (the rules step drops them, counted)
KEPT_UNDER_KEY = {"short": "one character", "masked": "a masked value", "placeholder": "a placeholder",
                  "echo": "the key's own name", "symbols": "no letter or digit"}


def _non_value(s: str, key: str | None) -> str | None:
    """Why the stripped literal ``s`` is no privacy value (rule 1), or None."""
    if len(s) < 2:
        return "short"
    pem = "PRIVATE KEY" in s and PEM.search(s)
    if not pem and (len(s) > 512 or s.count("\n") > 1):
        return "long"
    if _SLOT.search(s):
        return "slot"
    if not _symbols(s) and (_FORMAT.search(_SYMBOL_BRACES.sub("", s)) or _REGEX.search(s)):
        return "format"
    if _LABEL.match(s):
        return "label"  # "Stored: " + value: the label printed before a value
    if _ALL_MASK.match(s):
        return "mask only"  # nothing of the value is left: derived data, not a test input
    if _MASKED.search(s):
        return "masked"
    if _PLACEHOLDER.search(s):
        return "placeholder"
    if key is not None and normalize_identifier(s) == normalize_identifier(key):
        return "echo"
    return None if _ALNUM.search(s) else "symbols"


# what a keyed value lacks when it does not have its attribute's shape (never the value)
SHAPES = {
    "name": "1-5 words of letters", "address": "letters or a postal code", "email": "local@domain",
    "phone": "6-15 digits with phone punctuation", "date_of_birth": "a calendar date",
    "identity": "3-40 letters/digits with 4+ digits", "medical_record": "2-200 characters with a letter",
    "bank_statement": "the shape of its key (IBAN, BIC, account text)", "political": "2-200 characters with a letter",
    "password": "4-128 characters without line breaks or surrounding spaces", "auth_token": "4+ characters without spaces",
    "secret_key": "8+ characters without spaces", "credit_card": "12-19 digits, a CVV or an expiry",
    "username": "2-64 printable characters without spaces", "biometric": "4+ characters with a letter or digit",
}


# --- plausibility checks for keyed values ----------------------------------------------

def _check_name(v: str, k: str) -> bool:
    s = v.strip()
    return 2 <= len(s) <= 60 and len(s.split()) <= 5 and bool(_NAME.match(s))


def _check_address(v: str, k: str) -> bool:
    s = v.strip()
    return 2 <= len(s) <= 200 and (any(c.isalpha() for c in s) or (s.replace("-", "").isdigit() and 4 <= len(s) <= 10))


def _check_email(v: str, k: str) -> bool:
    return bool(_EMAILISH.match(v.strip()))


def _check_phone(v: str, k: str) -> bool:
    s = v.strip()
    return bool(_PHONEISH.match(s)) and 6 <= sum(c.isdigit() for c in s) <= 15


def _check_dob(v: str, k: str) -> bool:
    return parse_date(v) is not None


def _last_part(k: str) -> str:
    n = normalize_identifier(k or "")
    return n.rsplit("_", 1)[-1] if n else ""


def _check_identity(v: str, k: str) -> bool:
    s = v.strip()
    return bool(_IDCHARS.match(s)) and sum(c.isdigit() for c in s) >= 4


def _check_text(v: str, k: str) -> bool:
    s = v.strip()
    return 2 <= len(s) <= 200 and any(c.isalpha() for c in s)


def _check_bank(v: str, k: str) -> bool:
    s = v.strip()
    last = _last_part(k)
    if last == "iban":
        return bool(IBAN_SHAPE.match(s))
    if last in ("swift", "bic"):
        return bool(_BICISH.match(s))
    return 2 <= len(s) <= 100 and bool(_ALNUM.search(s))


def _check_password(v: str, k: str) -> bool:
    return 4 <= len(v) <= 128 and "\n" not in v and v.strip() == v


def _check_token(v: str, k: str) -> bool:
    return 4 <= len(v) <= 4096 and not any(c.isspace() for c in BEARER.sub("", v, count=1))


def _check_secret(v: str, k: str) -> bool:
    if PEM.search(v):
        return True
    words = v.split()
    if len(words) in (12, 15, 18, 21, 24) and all(w.isalpha() and w.islower() for w in words):
        return True  # BIP-39 style mnemonic
    return len(v) >= 8 and not any(c.isspace() for c in v)


def _card_part(k: str) -> str:
    """``cvv`` / ``expiry`` when a token of the key names that part of a card, else ``number``."""
    toks = set(normalize_identifier(k or "").split("_"))
    if toks & {"cvv", "cvc", "cvv2", "csc"}:
        return "cvv"
    if toks & {"expiry", "expiration", "exp", "expires"}:
        return "expiry"
    return "number"


def _check_card(v: str, k: str) -> bool:
    s = v.strip()
    part = _card_part(k)
    if part == "cvv":
        return bool(CVV.match(s))
    if part == "expiry":
        return bool(EXPIRY.match(s))
    return bool(_CARDISH.match(s)) and 12 <= sum(c.isdigit() for c in s) <= 19


def _check_username(v: str, k: str) -> bool:
    return 2 <= len(v) <= 64 and not any(c.isspace() for c in v) and v.isprintable()


def _check_biometric(v: str, k: str) -> bool:
    return 4 <= len(v.strip()) <= 4096 and bool(_ALNUM.search(v))


CHECKS = {
    "name": _check_name, "address": _check_address, "email": _check_email, "phone": _check_phone,
    "date_of_birth": _check_dob, "identity": _check_identity, "medical_record": _check_text,
    "bank_statement": _check_bank, "political": _check_text, "password": _check_password,
    "auth_token": _check_token, "secret_key": _check_secret, "credit_card": _check_card,
    "username": _check_username, "biometric": _check_biometric,
}
# the pattern reported for a keyed value that also passes the attribute's validator (else
# ``lexicon``: the key decided, validity is left to the format rules and the judge)
_KEY_PATTERN = {
    "email": ("email", is_email),
    "phone": ("phone", lambda v: parse_phone(v) is not None),
    "credit_card": ("luhn", lambda v: card_digits(v) is not None),
    "date_of_birth": ("date", lambda v: birth_date_error(v) is None),
    "auth_token": ("jwt", is_jwt),
}
_COLLECTION = re.compile(r"_(?:list|set|array|values|arr)$")
# a key naming the users themselves, not their login name: users, test_users, user_list, members
_PERSON_ENTITY = re.compile(r"^(?:[a-z0-9]+_)*(?:user|users|member|members|customer|customers|person|people)(?:_(?:list|set|array|arr))?$")
_NUMBERED = re.compile(r"_?\d+$")
_TITLED = re.compile(r"^(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Madam|Mme|Herr|Frau)\.?\s+\S", re.I)  # "Mx. 41": a person


def _key_holds_digits(attr: str | None, s: str) -> bool:
    """A run of digits is also a value of ``attr``: any account number, an identity or phone
    number of at most 15 digits (E.164's limit; 16+ digits under a phone key is a card)."""
    return attr == "bank_statement" or (attr in ("identity", "phone") and sum(c.isdigit() for c in s) <= 15)


# a test variable that names its case after the field: user_id_with_spaces, email_without_at,
# password_for_admin -> the part before the qualifier
_QUALIFIED = re.compile(r"^(?P<field>[a-z0-9]+(?:_[a-z0-9]+)*?)_(?:with|without|for|from|containing|having|when)_[a-z0-9]")


class Detector:
    """Classify literals for one taxonomy; caches key lookups."""

    def __init__(self, taxonomy: Taxonomy, phone_regions=PHONE_REGIONS):
        self.taxonomy = taxonomy
        self.phone_regions = tuple(phone_regions)
        self._keys: dict[str, str | None] = {}
        self._bare: set[str] = set()
        self.index = KeyIndex(taxonomy)
        self.attributes = frozenset(taxonomy.attributes)

    def attribute_for_key(self, key: str | None) -> str | None:
        """The attribute a key names (:class:`.keys.KeyIndex`: whole tokens with the
        attribute's role), also in the plural or as a collection (``passwords``,
        ``emailList``, ``phone_numbers`` -> singular) and numbered (``username2``,
        ``oldPassword1``, ``email_3`` -> without the number)."""
        if not key:
            return None
        try:
            return self._keys[key]
        except KeyError:
            pass
        hit = self.index.resolve(key)
        n = normalize_identifier(key)
        if hit is None and n[-1:].isdigit():  # numbered variables: username2, old_password_1
            numbered = _NUMBERED.sub("", n)
            if numbered and numbered != n:
                a = self.attribute_for_key(numbered)
                hit = (a, "numbered") if a else None
                if numbered in self._bare:
                    self._bare.add(n)
        q = _QUALIFIED.match(n) if hit is None else None
        if q is not None:
            a = self.attribute_for_key(q.group("field"))
            hit = (a, "qualified") if a else None
            if q.group("field") in self._bare:
                self._bare.add(n)
        if hit is None and not (key.startswith("__") and key.endswith("__")):
            stem = _COLLECTION.sub("", n)
            for single in (stem, stem[:-1] if stem.endswith("s") else "", stem[:-2] if stem.endswith("es") else ""):
                if single != n and len(single) >= 3:
                    hit = self.index.resolve(single)
                    if hit is not None:
                        if single in AMBIGUOUS_BARE:
                            self._bare.add(n)
                        break
        core = without_modifiers(n)
        if hit is not None and core != n and self.bare_head(core):
            self._bare.add(n)  # expected_names, set_name: modifiers say nothing about whose
        if hit is not None and n in AMBIGUOUS_BARE:
            self._bare.add(n)
        a = hit[0] if hit else None
        self._keys[key] = a
        return a

    def bare_head(self, key: str | None) -> bool:
        """True for a key that is only an ambiguous head word (``name``, ``names``): its
        value's shape decides whether it names a person (:func:`.keys.person_name_shape`)."""
        if not key or self.attribute_for_key(key) is None:
            return False
        return normalize_identifier(key) in self._bare

    def _has(self, attr: str) -> bool:
        return attr in self.attributes

    def checksum_format(self, s: str) -> tuple[str, str] | None:
        """A format that carries its own check digits: a card number (Luhn + issuer prefix +
        length), an IBAN, a Chinese resident ID. Such a value keeps that attribute whatever
        its key says (module docstring, rule 2)."""
        if not any(c.isdigit() for c in s):
            return None
        if self._has("credit_card") and card_digits(s):
            return "credit_card", "luhn"
        if self._has("bank_statement") and is_iban(s):
            return "bank_statement", "iban"
        if self._has("identity") and len(s) == 18:
            nid = national_id(s)
            if nid and nid[2]:
                return "identity", nid[1].lower()
        return None

    def classify(self, value: str, key: str | None = None) -> tuple[str, str] | None:
        """``(attribute, pattern)`` for a literal bound to ``key``, or None (module docstring)."""
        hit = self.classify_detailed(value, key)
        return hit[:2] if hit else None

    def classify_detailed(self, value: str, key: str | None = None) -> tuple[str, str, dict] | None:
        """``(attribute, pattern, validity)``: ``validity`` is ``{"ok": True}`` for a value
        with its attribute's shape, ``{"ok": False, "reason": ...}`` for a value a key names
        that lacks it (kept for the format rules, never dropped here; the reason names the
        shape, never the value)."""
        v = value
        s = v.strip()
        if not s or (len(s) < 2 and not _ALNUM.search(s)):
            return None
        a = self.attribute_for_key(key)
        why = _non_value(s, key)
        if self.taxonomy.is_field_name(v) and why != "echo":
            return None
        if why == "placeholder" and a is None:
            a = self._named_by(s)  # "your_private_key_here": a placeholder that names its attribute
        if why is not None:
            if a is None or self.bare_head(key) or why not in KEPT_UNDER_KEY:
                return None
            a = "email" if self._email(s) else a  # login("you@example.com")
            return a, "lexicon", {"ok": False, "reason": KEPT_UNDER_KEY[why]}
        if self._keyed_non_value(s, a, key):
            return None
        ok = {"ok": True}
        # 2. self-certifying shapes: e-mail, vendor key prefix, checksummed formats
        if self._email(s):
            return "email", "email", ok
        p = vendor_key(s)
        if p and self._has("secret_key"):
            return "secret_key", "prefix:" + p if p != "pem" else "pem", ok
        # a key that names a thing, or a transform's output (expectedHash): no keyless value
        keyed = a is not None or self.index.names_thing(key) or bool(key and transforms(key))
        if a is not None and self.bare_head(key) and not (person_name_shape(s) or _TITLED.match(s) or camel_full_name(s)):
            a = None  # name="weights": the name of a thing
        fmt = self.checksum_format(s)
        if fmt and fmt[0] == "credit_card" and _key_holds_digits(a, s):
            fmt = None  # Luhn passes 1 in 10 numbers: too weak against a key whose values are such numbers
        if fmt and fmt[0] != a:
            return fmt + (ok,)
        other = self._beside_key(s, a)
        if other:
            return other + (ok,)
        # 3. key
        if a is not None and CHECKS.get(a, _check_text)(v, key):
            if a == "credit_card" and _card_part(key) != "number":
                return a, "lexicon", ok
            name, valid = _KEY_PATTERN.get(a, ("lexicon", None))
            return a, name if valid is None or valid(s) else "lexicon", ok
        if fmt:
            return fmt + (ok,)
        if a == "username" and self._has("name") and _PERSON_ENTITY.match(normalize_identifier(key)) and is_full_name(s):
            return "name", "given_name", ok  # users = ["Ann Lee"]: the users themselves, by name (username= stays)
        # a key that names an attribute outweighs another attribute's weak shape: the value
        # under "iban" that looks like a phone number is an off-shape bank value for the rules
        if a is None:
            weak = self._weak_shape(s, keyed)
            return weak + (ok,) if weak else None
        shape = SHAPES.get(a, "its attribute's shape")
        if a == "credit_card" and _card_part(key) != "number":
            shape = "a CVV (3-4 digits)" if _card_part(key) == "cvv" else "an expiry (MM/YY)"
        return a, "lexicon", {"ok": False, "reason": f"keyed {a} value without {shape}"}

    def _email(self, s: str) -> bool:
        """An e-mail address, when the taxonomy has the attribute."""
        return "@" in s and self._has("email") and is_email(s)

    def _beside_key(self, s: str, a: str | None) -> tuple[str, str] | None:
        """Another attribute's shape that a keyed value has where its key's attribute cannot."""
        if a == "name" and self._has("address") and STREET.match(s):
            return "address", "street"  # lastName = "123 Main St": a house number starts no name
        if a == "email" and "@" not in s and self._has("name") and (is_given_name(s) or is_full_name(s)):
            return "name", "given_name"  # Send(50, recipient: "Alice"): the person, not an address
        return None

    def _keyed_non_value(self, s: str, a: str | None, key: str | None) -> bool:
        """True for a literal its key's attribute rules out as a value of that attribute."""
        if a in _UNDATED and DATE_ONLY.match(s):
            return True  # a transaction or record date under a bank or medical key: no value
        if a == "username" and _last_part(key).endswith("id") and _RECORD_ID.match(s):
            return True  # user_id = "77120": a record's number, not a name one logs in with
        if a == "password" and _DIGEST.match(s):
            return True  # 32+ hex digits under a password key: a stored hash, derived data
        # "No password provided" under a password key: a message about the value
        return a in CREDENTIALS and self._names_own_attribute(s, a)

    def _names_own_attribute(self, s: str, attr: str) -> bool:
        """True for a text of 3+ words one of which is a key of ``attr`` (``No password provided``)."""
        return len(s.split()) >= 3 and any(self.attribute_for_key(w.lower()) == attr
                                           for w in re.findall(r"[^\W\d_]+", s))

    def _named_by(self, s: str) -> str | None:
        """The attribute a placeholder spells out once its filler words go (``your_private_key``,
        ``YOUR-AUTH-TOKEN-HERE``), or None."""
        if not _SLUG.match(s):
            return None  # "Enter your password: " asks for a value
        words = [w for w in normalize_identifier(s).split("_") if w and w not in _FILLER]
        return self.attribute_for_key("_".join(words)) if 0 < len(words) <= 3 else None

    def _weak_shape(self, s: str, keyed: bool) -> tuple[str, str] | None:
        """4. weak shapes (module docstring)."""
        has_digit = any(c.isdigit() for c in s)
        if has_digit and self._has("identity") and is_ssn(s):
            return "identity", "ssn"
        if self._has("auth_token") and is_jwt(s):
            return "auth_token", "jwt"
        if self._has("auth_token") and is_auth_header(s):
            return "auth_token", "auth_header"
        if has_digit and self._has("phone") and is_formatted_phone(s, self.phone_regions):
            return "phone", "phone"
        if has_digit and self._has("address") and s[0].isdigit() and STREET.match(s):
            return "address", "street"
        if not keyed and not has_digit and self._has("name") and is_full_name(s):
            return "name", "given_name"
        if self._has("secret_key") and not keyed:  # a keyed value never falls through to entropy
            if HEX64.match(s):
                return "secret_key", "hex64"
            if len(s) >= 20 and is_entropy_token(s):
                return "secret_key", "entropy"
        return None
