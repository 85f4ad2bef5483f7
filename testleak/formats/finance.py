"""Payment card numbers (Luhn + issuer prefix + length), IBAN and BIC (``python-stdnum``)."""

from __future__ import annotations

import re

from stdnum import bic as _bic
from stdnum import iban as _iban
from stdnum import luhn as _luhn

# Card networks: (name, IIN prefix ranges (lo, hi) compared on the first len(lo) digits,
# allowed lengths). From the networks' published IIN tables (ISO/IEC 7812 registrations as
# listed by the card schemes); first match wins.
CARD_NETWORKS = [
    ("visa", [("4", "4")], (13, 16, 19)),
    ("mastercard", [("51", "55"), ("2221", "2720")], (16,)),
    ("amex", [("34", "34"), ("37", "37")], (15,)),
    ("discover", [("6011", "6011"), ("644", "649"), ("65", "65"), ("622126", "622925")], (16, 17, 18, 19)),
    ("jcb", [("3528", "3589")], (16, 17, 18, 19)),
    ("jcb", [("1800", "1800"), ("2131", "2131")], (15,)),  # JCB's older 15-digit ranges
    ("diners", [("300", "305"), ("36", "36"), ("38", "39")], (14, 15, 16, 17, 18, 19)),
    ("unionpay", [("62", "62")], (16, 17, 18, 19)),
    ("maestro", [("50", "50"), ("56", "58"), ("6", "6")], (12, 13, 14, 15, 16, 17, 18, 19)),
]
_CARD_SHAPE = re.compile(r"^\d[\d \-]{10,24}\d$")
CVV = re.compile(r"^\d{3,4}$")
EXPIRY = re.compile(r"^(?:0[1-9]|1[0-2])\s*/\s*(?:\d{2}|\d{4})$")
IBAN_SHAPE = re.compile(r"^[A-Za-z]{2}\d{2}[A-Za-z0-9 ]{10,36}$")
BIC_SHAPE = re.compile(r"^[A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?$")


def card_network(digits: str) -> str | None:
    """The network whose IIN ranges and lengths admit ``digits``, else None."""
    for name, ranges, lengths in CARD_NETWORKS:
        if len(digits) not in lengths:
            continue
        for lo, hi in ranges:
            if lo <= digits[: len(lo)] <= hi:
                return name
    return None


def card_check(v: str) -> tuple[str | None, str]:
    """``(network, reason)``: the network of a Luhn-valid card number with a known issuer
    prefix and length, or ``(None, why not)``."""
    s = v.strip()
    if not _CARD_SHAPE.match(s):
        return None, "not a card number (12-19 digits with optional spaces/dashes)"
    digits = s.replace(" ", "").replace("-", "")
    if not 12 <= len(digits) <= 19:
        return None, f"card number with {len(digits)} digits (12-19 expected)"
    if not _luhn.is_valid(digits):
        return None, "fails the Luhn check"
    net = card_network(digits)
    if net is None:
        return None, "Luhn-valid but no known issuer prefix (IIN) for this length"
    return net, f"Luhn-valid {net} number"


def card_digits(v: str) -> str | None:
    """Digits of a Luhn-valid card number with a known issuer prefix and length, else None."""
    net, _ = card_check(v)
    return re.sub(r"\D", "", v) if net else None


def is_iban(v: str) -> bool:
    s = v.strip()
    return bool(IBAN_SHAPE.match(s)) and _iban.is_valid(s)


def is_bic(v: str) -> bool:
    return _bic.is_valid(v.strip())
