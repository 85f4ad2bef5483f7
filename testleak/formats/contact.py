"""E-mail addresses and phone numbers, decided by ``email-validator`` and ``phonenumbers``.

Phone numbers: a value with a leading ``+`` (also a doubled ``++``) or an international
dialling prefix (``00``, or ``011`` from North America) is read as international; any other
value is tried against the national numbering plans of :data:`PHONE_REGIONS` in order.
Dates (``2024-01-31``, ``31.01.2024``) and the US SSN grouping ``ddd-dd-dddd`` are never
phone numbers.
"""

from __future__ import annotations

import re

import phonenumbers
from email_validator import EmailNotValidError, validate_email

# national numbering plans tried for numbers written without a country code
PHONE_REGIONS = ("US", "GB", "CN", "IN", "DE", "FR", "JP", "AU", "CA")

_PHONE_SHAPE = re.compile(r"^\+{0,2}[\d\s().\-/]{6,24}(?:\s*(?:x|ext\.?)\s*\d{1,6})?$")
_EXTENSION = re.compile(r"\s*(?:x|ext\.?)\s*\d{1,6}$")
_NOT_PHONE = re.compile(r"^\d{4}[-/.]\d{1,2}[-/.]\d{1,2}$|^\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}$|^\d{3}-\d{2}-\d{4}$")
_IDD = re.compile(r"^\(?(?:\+\s*\+|00|011)[\s\-.)]*(?=[1-9])")
_EMAIL_SHAPE = re.compile(r'^(?:"[^"\r\n]{1,254}"|[^@\s"]{1,254})@[^@\s]{1,255}$')  # lengths: the validator's call


def email_error(v: str) -> str | None:
    """None for a syntactically valid e-mail address (RFC 5321/5322 dot-atom or quoted local
    part, internationalized local part and domain, punycode; no DNS), else the reason."""
    s = v.strip()
    if "@" not in s or not _EMAIL_SHAPE.match(s):
        return "not an address shape (local@domain)"
    try:
        validate_email(s, check_deliverability=False, allow_quoted_local=True)
    except EmailNotValidError as e:
        return f"invalid email syntax: {type(e).__name__}"
    except Exception as e:  # noqa: BLE001 - the validator must never break extraction
        return f"email validator failed: {type(e).__name__}"
    return None


def is_email(v: str) -> bool:
    return email_error(v) is None


def _international(v: str) -> str | None:
    """``v`` rewritten with a ``+`` when it starts with ``++``, ``00`` or ``011``."""
    m = _IDD.match(v)
    return "+" + v[m.end():] if m else None


def parse_phone(v: str, regions=PHONE_REGIONS, *, valid: bool = True) -> phonenumbers.PhoneNumber | None:
    """The phone number ``v`` denotes, or None; ``valid`` False accepts any *possible* number."""
    s = v.strip()
    if not _PHONE_SHAPE.match(s) or _NOT_PHONE.match(s):
        return None
    if not 7 <= sum(ch.isdigit() for ch in _EXTENSION.sub("", s)) <= 15:
        return None
    ok = phonenumbers.is_valid_number if valid else phonenumbers.is_possible_number
    intl = s if s.startswith("+") and not s.startswith("++") else _international(s)
    tries = [(intl, None)] if intl else []
    if not s.startswith("+"):
        tries += [(s, r) for r in regions]
    for text, region in tries:
        try:
            n = phonenumbers.parse(text, region)
        except phonenumbers.NumberParseException:
            continue
        if ok(n):
            return n
    return None


def phone_error(v: str, regions=PHONE_REGIONS) -> str | None:
    """None for a valid phone number, else the reason."""
    if not _PHONE_SHAPE.match(v.strip()):
        return "not phone-shaped (digits with + - ( ) . / spaces, optional extension)"
    return None if parse_phone(v, regions) else "not a valid phone number in any known numbering plan"


def phone_region(v: str, regions=PHONE_REGIONS) -> str | None:
    n = parse_phone(v, regions)
    return phonenumbers.region_code_for_number(n) if n else None


# groups of 1-3 digits joined by dots: an IPv4 address or a version (``10.0.0.1``, ``123.456.789``)
_DOTTED_NUMBER = re.compile(r"^\d{1,3}(?:\.\d{1,3}){2,3}$")


def is_formatted_phone(v: str, regions=PHONE_REGIONS) -> bool:
    """A valid number written as one (a leading ``+`` or separators), not a bare digit run
    nor a dotted address or version number."""
    s = v.strip()
    if not (s.startswith("+") or any(ch in s for ch in " -()./")) or _DOTTED_NUMBER.match(s):
        return False
    return parse_phone(s, regions) is not None
