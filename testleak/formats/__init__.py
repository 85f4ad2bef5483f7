"""Attribute formats and validators: the one home for both ExtractPII (``testleak.extract``)
and the format rules (``testleak.verify.rules``), plus the one markdown code-block splitter.

Format questions are decided by well-kept libraries: ``email-validator`` (e-mail syntax,
no DNS), ``phonenumbers`` (phone numbers), ``python-stdnum`` (Luhn, IBAN, BIC, SSN, Chinese
RIC, Aadhaar), ``dateutil`` (dates), ``markdown-it-py`` (code blocks). This package depends
on nothing else in testleak.
"""

from .codeblocks import LANGUAGE_ALIASES, CodeBlock, normalize_language, split_code_blocks
from .contact import (PHONE_REGIONS, email_error, is_email, is_formatted_phone, parse_phone, phone_error,
                      phone_region)
from .dates import birth_date_error, parse_date
from .entropy import char_entropy, shannon_entropy
from .finance import (BIC_SHAPE, CARD_NETWORKS, CVV, EXPIRY, IBAN_SHAPE, card_check, card_digits, card_network,
                      is_bic, is_iban)
from .ids import NATIONAL_IDS, SSN_FORMATTED, is_ssn, national_id
from .secrets import BEARER, HEX64, JWT, PEM, VENDOR_KEYS, is_auth_header, is_entropy_token, is_jwt, vendor_key

__all__ = [
    "BEARER", "BIC_SHAPE", "CARD_NETWORKS", "CVV", "CodeBlock", "EXPIRY", "HEX64", "IBAN_SHAPE", "JWT",
    "LANGUAGE_ALIASES", "NATIONAL_IDS", "PEM", "PHONE_REGIONS", "SSN_FORMATTED", "VENDOR_KEYS", "birth_date_error",
    "card_check", "card_digits", "card_network", "char_entropy", "email_error", "is_bic", "is_email",
    "is_auth_header", "is_entropy_token", "is_formatted_phone", "is_iban", "is_jwt", "is_ssn", "national_id",
    "normalize_language", "parse_date", "parse_phone", "phone_error", "phone_region", "shannon_entropy",
    "split_code_blocks", "vendor_key",
]
