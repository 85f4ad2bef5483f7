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

import re

from ..formats import (BEARER, CVV, EXPIRY, HEX64, PEM, PHONE_REGIONS, SSN_FORMATTED, birth_date_error,
                       card_digits, is_bic, is_email, is_entropy_token, is_formatted_phone, is_iban, is_jwt,
                       is_ssn, parse_phone, vendor_key)
from ..taxonomy import Taxonomy, normalize_identifier

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

# --- shapes ---------------------------------------------------------------------------
_STREET = re.compile(
    r"^\d{1,6}[A-Za-z]?\s+(?:[A-Za-z0-9.'-]+\s+){0,5}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Way|"
    r"Terrace|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir)\.?(?:[\s,].*)?$",
    re.I,
)
_NAME = re.compile(r"^[^\W\d_][^\W\d_.'’\- ]*(?:[.'’\- ]{1,2}[^\W\d_]+)*\.?$", re.U)
_IDCHARS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ./-]{2,38}[A-Za-z0-9]$")


def non_value(v: str, key: str | None = None) -> bool:
    """True for strings that are not privacy values (see the module docstring, rule 1)."""
    s = v.strip()
    if len(s) < 2 or not _ALNUM.search(s):
        return True
    pem = "PRIVATE KEY" in s and PEM.search(s)
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
    return parse_phone(v, valid=False) is not None


def _check_dob(v: str, k: str) -> bool:
    return birth_date_error(v) is None


def _last_part(k: str) -> str:
    n = normalize_identifier(k or "")
    return n.rsplit("_", 1)[-1] if n else ""


def _check_identity(v: str, k: str) -> bool:
    s = v.strip()
    if SSN_FORMATTED.match(s):  # an SSN-formatted value must be a valid SSN
        return is_ssn(s)
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
        return is_bic(s)
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


def _check_card(v: str, k: str) -> bool:
    s = v.strip()
    last = _last_part(k)
    if last in ("cvv", "cvc", "cvv2", "csc"):
        return bool(CVV.match(s))
    if last in ("expiry", "expiration", "exp"):
        return bool(EXPIRY.match(s))
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
        p = vendor_key(s)
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
        if self._has("auth_token") and is_jwt(s):
            return "auth_token", "jwt"
        if has_digit and self._has("phone") and is_formatted_phone(s, self.phone_regions):
            return "phone", "phone"
        if has_digit and self._has("address") and s[0].isdigit() and _STREET.match(s):
            return "address", "street"
        if self._has("secret_key"):
            if HEX64.match(s):
                return "secret_key", "hex64"
            if len(s) >= 20 and is_entropy_token(s):
                return "secret_key", "entropy"
        return None
