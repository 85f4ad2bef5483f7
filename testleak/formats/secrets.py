"""Secret formats: vendor key prefixes, PEM private keys, JWTs, high-entropy tokens.

One table (:data:`VENDOR_KEYS`) serves ExtractPII (a vendor prefix makes a value a
``secret_key`` whatever its key) and the format rules (a vendor format passes the
``secret_key`` / ``auth_token`` rule). Sources: the vendors' documented token formats
(OpenAI/Anthropic ``sk-``, Stripe ``sk_|rk_|pk_`` + ``live|test``, GitHub ``gh?_`` and
``github_pat_``, AWS access key ids ``AKIA``/``ASIA``, Slack ``xox?-``, Google ``AIza``).
"""

from __future__ import annotations

import re

from .entropy import char_entropy

VENDOR_KEYS: list[tuple[str, re.Pattern]] = [
    ("sk", re.compile(r"^sk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{16,}$")),
    ("stripe", re.compile(r"^(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}$")),
    ("ghp", re.compile(r"^gh[pousr]_[A-Za-z0-9]{30,}$")),
    ("github_pat", re.compile(r"^github_pat_[A-Za-z0-9_]{22,}$")),
    ("akia", re.compile(r"^(?:AKIA|ASIA)[0-9A-Z]{16}$")),
    ("slack", re.compile(r"^xox[abposr]-[A-Za-z0-9-]{10,}$")),
    ("aiza", re.compile(r"^AIza[0-9A-Za-z_-]{35}$")),
]
PEM = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
BEARER = re.compile(r"^(?:Bearer|token|Token)\s+")
JWT = re.compile(r"^eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*$")
# an Authorization header's value: an auth scheme, then the credential (RFC 6750 / 7617 token68)
AUTH_HEADER = re.compile(r"^(?:Bearer|Basic|Token|token)\s+(?P<cred>[A-Za-z0-9\-._~+/]+=*)$")
MIN_HEADER_CREDENTIAL = 6  # a keyless header is a token by its shape only with this many characters
HEX64 = re.compile(r"^0x[0-9a-fA-F]{64}$")  # a 256-bit private key (e.g. an Ethereum key)
_TOKENCHARS = re.compile(r"^[A-Za-z0-9+/=_-]{20,}$")
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")


def vendor_key(v: str) -> str | None:
    """Name of the vendor key format (or ``pem``) that ``v`` carries, else None.

    A leading ``Bearer ``/``token `` is ignored."""
    if "PRIVATE KEY" in v and PEM.search(v):
        return "pem"
    s = BEARER.sub("", v.strip(), count=1)
    if len(s) < 16 or " " in s:
        return None
    for name, rx in VENDOR_KEYS:
        if rx.match(s):
            return name
    return None


def is_auth_header(v: str) -> bool:
    """``Bearer q7Zt2Lx...``: a credential in an Authorization header's scheme."""
    m = AUTH_HEADER.match(v)
    return m is not None and len(m.group("cred")) >= MIN_HEADER_CREDENTIAL


def is_jwt(v: str) -> bool:
    return v.startswith("eyJ") and bool(JWT.match(v))


def _alphabet_run(v: str, n: int = 10) -> bool:
    """``v`` holds ``n`` or more consecutive characters of the alphabet or the digits in
    order (``abcdefghij``, ``0123456789``): a character set, not a drawn token."""
    run = 1
    for a, b in zip(v, v[1:]):
        run = run + 1 if ord(b) == ord(a) + 1 and a.isalnum() and b.isalnum() else 1
        if run >= n:
            return True
    return False


def is_entropy_token(v: str) -> bool:
    """A 20+ character base64/hex token with letters and digits and high entropy:
    >= 4.0 bits/char, or for hex 40+ characters and >= 3.0 bits/char; no character set
    (:func:`_alphabet_run`)."""
    if not _TOKENCHARS.match(v) or _alphabet_run(v):
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    if _HEX.match(v):
        return len(v) >= 40 and char_entropy(v) >= 3.0
    return char_entropy(v) >= 4.0
