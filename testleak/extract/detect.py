"""Value -> attribute mapping for ExtractPII: non-value filters, key lexicon, value shapes.

Method (paper section 4.2: "collects token spans ... that match the structural patterns of
our privacy attributes"; appendix B.2: values come from test inputs, argument values and
field assignments). For one literal ``value`` with its ``key`` (the key / parameter /
variable name it is bound to, or None) :meth:`Detector.classify` returns
``(attribute, pattern)`` or None, in this order of precedence:

1. Non-values are dropped: empty or one character, no letter or digit, format strings
   (``{}``, ``{name}``, ``%s``, ``${x}``), regular expressions, slot placeholders
   (``<EMAIL>``), masked values (``***``, ``XXXX``), obvious placeholders (``your_api_key``,
   ``changeme``, ``dummy``...), the key's own name as value (``password="password"``),
   multi-line text (except PEM keys) and anything over 512 characters.
2. Self-certifying shapes win over any key: an email (email-validator syntax, no DNS)
   -> ``email``; a vendor secret prefix (``sk-``, ``sk_live_``, ``ghp_``, ``github_pat_``,
   ``AKIA``, ``xox?-``, ``AIza``) or a PEM private key -> ``secret_key``. So
   ``username="ann@corp.io"`` is an email, ``password="sk-..."`` a secret key.
3. Otherwise the key decides when it maps to an attribute (``Taxonomy.attribute_for_name``)
   and the value passes that attribute's plausibility check (:data:`CHECKS`: e.g. an email
   key needs a valid email, a phone key a possible phone number, a card key a Luhn-valid
   number, a CVV or an expiry, a date-of-birth key a real date 1900..today, a name key
   1-5 words of letters). Pattern ``lexicon`` (or the shape name when the check is a shape).
4. Otherwise weaker shapes, first match wins: card (Luhn via ``stdnum.luhn`` + issuer
   prefix + length) -> credit_card; IBAN (``stdnum.iban``) -> bank_statement; US SSN
   ``ddd-dd-dddd`` (``stdnum.us.ssn``) -> identity; JWT -> auth_token; phone number that is
   formatted (leading ``+`` or separators) and valid for ``phonenumbers`` (international,
   else one of :data:`PHONE_REGIONS`) -> phone; street address ``<number> <words> Street|Ave|..``
   -> address; ``0x`` + 64 hex -> secret_key (``hex64``); a 20+ character token of
   base64/hex characters with letters and digits and Shannon entropy >= 4.0 bits per
   character (hex: 40+ characters, >= 3.0) -> secret_key (``entropy``).
5. Otherwise no candidate. Dates of birth are never detected by shape alone.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections import Counter

import phonenumbers
from email_validator import EmailNotValidError, validate_email
from stdnum import bic as _bic
from stdnum import iban as _iban
from stdnum import luhn as _luhn
from stdnum.us import ssn as _ssn

from ..taxonomy import Taxonomy, normalize_identifier

PHONE_REGIONS = ("US", "GB", "CN", "IN", "DE", "FR", "AU", "CA")

# --- non-values -----------------------------------------------------------------------
_ALNUM = re.compile(r"[^\W_]", re.U)
_FORMAT = re.compile(r"\{\}|\{\d+\}|\{[A-Za-z_][\w.\[\]]*(?:![rsa])?(?::[^{}]*)?\}|%[-+ #0]*\d*(?:\.\d+)?[sdifrxXeEgGc]\b|\$\{")
_REGEX = re.compile(r"^\^|(?<![\d\s])\$$|\\[dwsbDWSB.]|\[(?:a-z|A-Z|0-9|\^)|\(\?[:=!<P]|\.[*+]|\[\^")
_SLOT = re.compile(r"^<[A-Z][A-Z0-9_ -]*>$")
_MASKED = re.compile(r"\*{3,}|[xX]{4,}|•{3,}")
_PLACEHOLDER = re.compile(
    r"(?:^|[^a-z])(?:your|placeholder|replace[-_ ]?me|change[-_ ]?me|insert|dummy|fake|redacted|lorem|todo|tbd)(?:[^a-z]|$)",
    re.I,
)
_PEM = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# --- shapes ---------------------------------------------------------------------------
_EMAIL_PRE = re.compile(r"^[^@\s\"'<>(),;:]+@[^@\s\"'<>(),;:]+\.[A-Za-z]{2,}$")
_PREFIXES = [
    ("sk", re.compile(r"^sk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{16,}$")),
    ("stripe", re.compile(r"^(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}$")),
    ("ghp", re.compile(r"^gh[pousr]_[A-Za-z0-9]{30,}$")),
    ("github_pat", re.compile(r"^github_pat_[A-Za-z0-9_]{22,}$")),
    ("akia", re.compile(r"^(?:AKIA|ASIA)[0-9A-Z]{16}$")),
    ("slack", re.compile(r"^xox[abprs]-[A-Za-z0-9-]{10,}$")),
    ("aiza", re.compile(r"^AIza[0-9A-Za-z_-]{35}$")),
]
_BEARER = re.compile(r"^(?:Bearer|token|Token)\s+")
_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*$")
_HEX64 = re.compile(r"^0x[0-9a-fA-F]{64}$")
_TOKENCHARS = re.compile(r"^[A-Za-z0-9+/=_-]{20,}$")
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")
_CARD_PRE = re.compile(r"^\d[\d -]{11,22}\d$")
_IBAN_PRE = re.compile(r"^[A-Z]{2}\d{2}[A-Z0-9 ]{10,36}$")
_SSN = re.compile(r"^\d{3}-\d{2}-\d{4}$")
_PHONE_PRE = re.compile(r"^\+?[\d\s().\-/]{7,24}(?:\s*(?:x|ext\.?)\s*\d{1,6})?$")
_STREET = re.compile(
    r"^\d{1,6}[A-Za-z]?\s+(?:[A-Za-z0-9.'-]+\s+){0,5}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|"
    r"Terrace|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir)\.?(?:[\s,].*)?$",
    re.I,
)
_NAME = re.compile(r"^[^\W\d_][^\W\d_.'’\- ]*(?:[.'’\- ]{1,2}[^\W\d_]+)*\.?$", re.U)
_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%d-%m-%Y",
                 "%m-%d-%Y", "%Y%m%d", "%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y",
                 "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%SZ")
_IDCHARS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ./-]{2,38}[A-Za-z0-9]$")
_EXPIRY = re.compile(r"^(?:0[1-9]|1[0-2])\s*/\s*(?:\d{2}|\d{4})$")

# Issuer identification number ranges (first digits) and allowed lengths, per network.
_IIN = [
    ((("4",),), (13, 16, 19)),  # Visa
    ((tuple(str(i) for i in range(51, 56)),), (16,)),  # Mastercard 51-55
    ((tuple(str(i) for i in range(2221, 2721)),), (16,)),  # Mastercard 2-series
    ((("34", "37"),), (15,)),  # Amex
    ((("6011", "65") + tuple(str(i) for i in range(644, 650)),), (16, 17, 18, 19)),  # Discover
    ((tuple(str(i) for i in range(3528, 3590)),), (16, 17, 18, 19)),  # JCB
    ((("36", "38", "39") + tuple(str(i) for i in range(300, 306)),), (14, 16)),  # Diners
    ((("62",),), (16, 17, 18, 19)),  # UnionPay
    ((("50", "56", "57", "58", "6304", "6759", "6761", "6762", "6763"),), (12, 13, 14, 15, 16, 17, 18, 19)),  # Maestro
]


def shannon_entropy(s: str) -> float:
    """Shannon entropy of the character distribution of ``s`` in bits per character."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def is_email(v: str) -> bool:
    if not _EMAIL_PRE.match(v):
        return False
    try:
        validate_email(v, check_deliverability=False)
        return True
    except EmailNotValidError:
        return False
    except Exception:  # noqa: BLE001 - the validator must never break extraction
        return False


def card_digits(v: str) -> str | None:
    """Digits of a Luhn-valid card number with a known issuer prefix and length, else None."""
    if not _CARD_PRE.match(v):
        return None
    d = v.replace(" ", "").replace("-", "")
    if not d.isdigit() or not 12 <= len(d) <= 19 or not _luhn.is_valid(d):
        return None
    for (prefixes,), lengths in _IIN:
        if len(d) in lengths and d.startswith(prefixes):
            return d
    return None


def is_iban(v: str) -> bool:
    return bool(_IBAN_PRE.match(v)) and _iban.is_valid(v)


def is_ssn(v: str) -> bool:
    return bool(_SSN.match(v)) and _ssn.is_valid(v)


# dates and the SSN grouping ddd-dd-dddd are never read as phone numbers
_DATE_SHAPE = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$|^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$|^\d{3}-\d{2}-\d{4}$")


def _phone_parse(v: str, regions=PHONE_REGIONS, *, valid: bool):
    if not _PHONE_PRE.match(v) or _DATE_SHAPE.match(v):
        return None
    digits = sum(ch.isdigit() for ch in v)
    if not 7 <= digits <= 15:
        return None
    tries = [None] if v.startswith("+") else list(regions)
    for r in tries:
        try:
            n = phonenumbers.parse(v, r)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(n) if valid else phonenumbers.is_possible_number(n):
            return n
    return None


def is_phone_shape(v: str, regions=PHONE_REGIONS) -> bool:
    """A formatted (``+`` or separators) number valid for phonenumbers."""
    if not (v.startswith("+") or any(ch in v for ch in " -().")):
        return False
    return _phone_parse(v, regions, valid=True) is not None


def parse_date(v: str) -> _dt.date | None:
    s = v.strip()
    if not 6 <= len(s) <= 25 or not any(ch.isdigit() for ch in s):
        return None
    for fmt in _DATE_FORMATS:
        try:
            return _dt.datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    return None


def secret_prefix(v: str) -> str | None:
    """Name of the vendor secret prefix or ``pem`` that ``v`` carries, else None."""
    if "PRIVATE KEY" in v and _PEM.search(v):
        return "pem"
    s = _BEARER.sub("", v, count=1)
    if len(s) < 16 or " " in s:
        return None
    for name, rx in _PREFIXES:
        if rx.match(s):
            return name
    return None


def is_entropy_token(v: str) -> bool:
    if not _TOKENCHARS.match(v):
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    if _HEX.match(v):
        return len(v) >= 40 and shannon_entropy(v) >= 3.0
    return shannon_entropy(v) >= 4.0


def non_value(v: str, key: str | None = None) -> bool:
    """True for strings that are not privacy values (see the module docstring, rule 1)."""
    s = v.strip()
    if len(s) < 2 or not _ALNUM.search(s):
        return True
    pem = "PRIVATE KEY" in s and _PEM.search(s)
    if not pem and (len(s) > 512 or s.count("\n") > 1):
        return True
    if _SLOT.match(s) or _MASKED.search(s) or _FORMAT.search(s) or _REGEX.search(s):
        return True
    if _PLACEHOLDER.search(s):
        return True
    if key is not None and normalize_identifier(s) == normalize_identifier(key):
        return True
    return False


# --- plausibility checks for keyed values ----------------------------------------------

def _check_name(v: str, k: str) -> bool:
    s = v.strip()
    return 2 <= len(s) <= 60 and len(s.split()) <= 5 and bool(_NAME.match(s))


def _check_address(v: str, k: str) -> bool:
    s = v.strip()
    return 2 <= len(s) <= 200 and (any(c.isalpha() for c in s) or (s.replace("-", "").isdigit() and 4 <= len(s) <= 10))


def _check_email(v: str, k: str) -> bool:
    return is_email(v.strip())


def _check_phone(v: str, k: str) -> bool:
    return _phone_parse(v.strip(), valid=False) is not None


def _check_dob(v: str, k: str) -> bool:
    d = parse_date(v)
    return d is not None and _dt.date(1900, 1, 1) <= d <= _dt.date.today()


def _last_part(k: str) -> str:
    n = normalize_identifier(k or "")
    return n.rsplit("_", 1)[-1] if n else ""


def _check_identity(v: str, k: str) -> bool:
    s = v.strip()
    if _SSN.match(s):  # an SSN-formatted value must be a valid SSN
        return _ssn.is_valid(s)
    return bool(_IDCHARS.match(s)) and sum(c.isdigit() for c in s) >= 4


def _check_text(v: str, k: str) -> bool:
    s = v.strip()
    return 2 <= len(s) <= 200 and any(c.isalpha() for c in s)


def _check_bank(v: str, k: str) -> bool:
    s = v.strip()
    last = _last_part(k)
    if last == "iban":
        return is_iban(s)
    if last in ("swift", "bic"):
        return _bic.is_valid(s)
    return 2 <= len(s) <= 100 and bool(_ALNUM.search(s))


def _check_password(v: str, k: str) -> bool:
    return 4 <= len(v) <= 128 and "\n" not in v and v.strip() == v


def _check_token(v: str, k: str) -> bool:
    return 4 <= len(v) <= 4096 and not any(c.isspace() for c in _BEARER.sub("", v, count=1))


def _check_secret(v: str, k: str) -> bool:
    if _PEM.search(v):
        return True
    words = v.split()
    if len(words) in (12, 15, 18, 21, 24) and all(w.isalpha() and w.islower() for w in words):
        return True  # BIP-39 style mnemonic
    return len(v) >= 8 and not any(c.isspace() for c in v)


def _check_card(v: str, k: str) -> bool:
    s = v.strip()
    last = _last_part(k)
    if last in ("cvv", "cvc", "cvv2", "csc"):
        return s.isdigit() and len(s) in (3, 4)
    if last in ("expiry", "expiration", "exp"):
        return bool(_EXPIRY.match(s))
    return card_digits(s) is not None


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
# the pattern name reported when a keyed value passes a check that is a shape
_KEY_PATTERN = {"email": "email", "phone": "phone", "credit_card": "luhn", "date_of_birth": "date"}
# (a keyed IBAN is reported as "lexicon": the key decided, the checksum only confirmed)


class Detector:
    """Classify literals for one taxonomy; caches key lookups."""

    def __init__(self, taxonomy: Taxonomy, phone_regions=PHONE_REGIONS):
        self.taxonomy = taxonomy
        self.phone_regions = tuple(phone_regions)
        self._keys: dict[str, str | None] = {}
        self.attributes = frozenset(taxonomy.attributes)

    def attribute_for_key(self, key: str | None) -> str | None:
        if not key:
            return None
        try:
            return self._keys[key]
        except KeyError:
            a = self.taxonomy.attribute_for_name(key)
            self._keys[key] = a
            return a

    def _has(self, attr: str) -> bool:
        return attr in self.attributes

    def classify(self, value: str, key: str | None = None) -> tuple[str, str] | None:
        """``(attribute, pattern)`` for a literal bound to ``key``, or None (module docstring)."""
        v = value
        if non_value(v, key):
            return None
        s = v.strip()
        # 2. self-certifying shapes
        if "@" in s and self._has("email") and is_email(s):
            return "email", "email"
        p = secret_prefix(s)
        if p and self._has("secret_key"):
            return "secret_key", "prefix:" + p if p != "pem" else "pem"
        # 3. key
        a = self.attribute_for_key(key)
        if a is not None:
            check = CHECKS.get(a, _check_text)
            if check(v, key):
                if a == "credit_card" and _last_part(key) in ("cvv", "cvc", "cvv2", "csc", "expiry", "expiration", "exp"):
                    return a, "lexicon"
                return a, _KEY_PATTERN.get(a, "lexicon")
        # 4. weak shapes
        has_digit = any(c.isdigit() for c in s)
        if has_digit:
            if self._has("credit_card") and card_digits(s):
                return "credit_card", "luhn"
            if self._has("bank_statement") and is_iban(s):
                return "bank_statement", "iban"
            if self._has("identity") and is_ssn(s):
                return "identity", "ssn"
        if s.startswith("eyJ") and self._has("auth_token") and _JWT.match(s):
            return "auth_token", "jwt"
        if has_digit and self._has("phone") and is_phone_shape(s, self.phone_regions):
            return "phone", "phone"
        if has_digit and self._has("address") and s[0].isdigit() and _STREET.match(s):
            return "address", "street"
        if self._has("secret_key"):
            if _HEX64.match(s):
                return "secret_key", "hex64"
            if len(s) >= 20 and is_entropy_token(s):
                return "secret_key", "entropy"
        return None
