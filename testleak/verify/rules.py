"""Format rules: attribute-specific structural checks on candidate values (paper Sec. 4.3).

The deterministic, structural half of the paper's judge, with the validators of
:mod:`testleak.formats` (shared with ExtractPII): ``email-validator`` (no DNS), ``phonenumbers``,
``python-stdnum`` (Luhn plus issuer prefixes, SSN, Chinese ID, Aadhaar, IBAN, BIC), ``dateutil``
(1900..today), entropy and shape for keys, tokens and passwords. Placeholders come from
testleak/resources/placeholders.yaml, whose exact-value lists hold keyed hashes under the list's
published key (:func:`placeholder_hash`), not values, so raw candidate values stay out of git; the
hashes hide the text from scans, not from a guesser. Extend the lists with ``testleak placeholders
add``. ``check(attribute, value, validity=None) -> {"ok": bool, "reason": str}``; reasons never
contain the raw value.
"""

from __future__ import annotations

import re
from datetime import date
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping

from ..errors import ConfigError
from ..privacy import keyed_hash
from ..formats import (BIC_SHAPE, CVV, EXPIRY, HEX64, IBAN_SHAPE, birth_date_error, card_check, char_entropy,
                       email_error, is_bic, is_iban, is_jwt, national_id, phone_error, phone_region, vendor_key)
from ..resources_io import parse_yaml


def _result(ok: bool, reason: str) -> dict:
    return {"ok": bool(ok), "reason": reason}


PLACEHOLDER_LISTS = ("values", "email_domains", "test_cards")


def normalize_placeholder(kind: str, value: object) -> str:
    """A value as its placeholder list compares it: ``values`` stripped and lower-cased,
    ``email_domains`` stripped and lower-cased, ``test_cards`` its digits."""
    s = str(value)
    if kind == "test_cards":
        return re.sub(r"\D", "", s)
    if kind in ("values", "email_domains"):
        return s.strip().lower()
    raise ConfigError(f"unknown placeholder list {kind!r}; known: {', '.join(PLACEHOLDER_LISTS)}")


def placeholder_hash(kind: str, value: object, key: str) -> str:
    """The entry of ``value`` in placeholder list ``kind``: :func:`testleak.privacy.keyed_hash`
    of the normalized value under the list file's (published) key."""
    return keyed_hash(normalize_placeholder(kind, value), key.encode("utf-8"))


def placeholders_path() -> Path:
    """The shipped placeholder list, testleak/resources/placeholders.yaml."""
    return Path(str(resources.files("testleak.resources").joinpath("placeholders.yaml")))


def _hash_list(data, key: str) -> set[str]:
    """Hashes of a list, or of a mapping of category -> list (``values``)."""
    body = data[key]
    items = [h for v in body.values() for h in (v or [])] if isinstance(body, dict) else list(body or [])
    bad = [h for h in items if not (isinstance(h, str) and re.fullmatch(r"[0-9a-f]{16}", h))]
    if bad:
        raise TypeError(f"{key} holds {len(bad)} entries that are not 16-hex-digit hashes (add values with "
                        f"`testleak placeholders add`)")
    return set(items)


@lru_cache(maxsize=4)
def load_placeholders(path: str | None = None) -> dict:
    """The placeholder lists: ``key``, ``values``, ``email_domains`` and ``test_cards`` (sets of
    keyed hashes of normalized values, :func:`placeholder_hash`) and ``patterns``. The exact
    values are not in the file (raw candidate values stay out of git); matching is as if they were."""
    text = open(path, encoding="utf-8").read() if path else placeholders_path().read_text(encoding="utf-8")
    data = parse_yaml(text)
    try:
        if data.get("version") != 3:
            raise TypeError(f"version {data.get('version')!r}, expected 3 (keyed hashes under key)")
        key = data["key"]
        if not isinstance(key, str) or not key:
            raise TypeError("key must be a non-empty string")
        return {
            "key": key,
            **{k: _hash_list(data, k) for k in PLACEHOLDER_LISTS},
            "patterns": [(p["name"], re.compile(p["regex"], re.I)) for p in data["patterns"]],
        }
    except (KeyError, TypeError, AttributeError, re.error) as e:
        raise ConfigError(f"placeholder list {path or 'placeholders.yaml'} is malformed ({e}); it needs version 3, key, "
                          f"values, email_domains, test_cards (hashes) and patterns[{{name, regex}}]") from None


def _append_keeping_trailing_comment(seq, item) -> None:
    """Append to a ruamel sequence; a comment after its last item (ruamel keeps the comment line
    above the next key there) moves to the new last item, so it stays above that key."""
    ca = getattr(seq, "ca", None)
    comment = ca.items.pop(len(seq) - 1, None) if ca is not None and len(seq) else None
    seq.append(item)
    if comment is not None:
        ca.items[len(seq) - 1] = comment


def add_placeholders(values: list[str], kind: str = "values", category: str | None = None,
                     path: str | Path | None = None) -> list[tuple[str, bool]]:
    """Add values to a placeholder list file as keyed hashes (comments and order kept; round
    trip by ruamel.yaml, which DVC brings). ``category``: the group of ``values`` (required
    there, e.g. ``names``; a new name starts a group). Returns ``(hash, added)`` per value
    (False: already listed)."""
    from ruamel.yaml import YAML

    if kind not in PLACEHOLDER_LISTS:
        raise ConfigError(f"unknown placeholder list {kind!r}; known: {', '.join(PLACEHOLDER_LISTS)}")
    p = Path(path) if path else placeholders_path()
    ry = YAML()
    ry.preserve_quotes = True
    ry.width = 4096
    ry.indent(mapping=2, sequence=4, offset=2)
    doc = ry.load(p.read_text(encoding="utf-8"))
    key = str(doc["key"])
    if kind == "values":
        if not category:
            raise ConfigError(f"values are grouped by category: give --category (one of {', '.join(doc['values'])}, "
                              f"or a new one)")
        if category not in doc["values"]:
            doc["values"][category] = []
        target = doc["values"][category]
        listed = {h for v in doc["values"].values() for h in (v or [])}
    else:
        target = doc[kind]
        listed = set(target)
    out = []
    for v in values:
        if not normalize_placeholder(kind, v):
            raise ConfigError(f"a value for {kind} is empty after normalization")
        h = placeholder_hash(kind, v, key)
        out.append((h, h not in listed))
        if h not in listed:
            _append_keeping_trailing_comment(target, h)
            listed.add(h)
    with p.open("w", encoding="utf-8") as f:
        ry.dump(doc, f)
    load_placeholders.cache_clear()
    return out


def taxonomy_words(taxonomy) -> frozenset[str]:
    """The labels of ``taxonomy`` (attribute keys, display names, lexicon entries), normalized
    (:func:`testleak.taxonomy.normalize_identifier`)."""
    from ..taxonomy import normalize_identifier

    words = {w for a in taxonomy.attributes.values() for w in (a.key, a.label, *a.lexicon, *a.lexicon_i18n)}
    return frozenset(n for n in (normalize_identifier(w) for w in words) if n)


def generic_reason(value: str, taxonomy) -> str | None:
    """Why ``value`` is a word of the taxonomy rather than a value (it equals an attribute key,
    display name or lexicon entry, ignoring case, accents and separators), or None."""
    from ..taxonomy import normalize_identifier

    n = normalize_identifier(value)
    if not n:
        return None
    words = getattr(taxonomy, "_testleak_words", None)
    if words is None:
        words = taxonomy_words(taxonomy)
        try:
            taxonomy._testleak_words = words
        except AttributeError:
            pass
    return "a label of the taxonomy (attribute key, display name or lexicon entry), not a value" if n in words else None


def withhold(cands: list[dict], taxonomy, placeholders: bool = True) -> tuple[list[dict], dict]:
    """Candidates whose value is no value to keep, with the raw ``value`` replaced by ``masked``
    and ``withheld`` (``echo``: marked ``echo_of``; ``generic``: :func:`generic_reason`;
    ``placeholder``: :func:`placeholder_reason`, when ``placeholders``: the format rules run)
    and ``withheld_reason`` (never the value); the others unchanged. Returns the records and the
    counts ``{"withheld": {reason: n}}``."""
    from ..privacy import mask

    out, counts = [], {"echo": 0, "generic": 0, "placeholder": 0}
    for c in cands:
        v = c.get("value")
        why = None
        if isinstance(v, str):
            if c.get("echo_of"):
                why = ("echo", f"echo of {c['echo_of']} ({c.get('echo_match') or 'equal'}): the prompt of this "
                               f"response gave the model this value")
            elif (g := generic_reason(v, taxonomy)):
                why = ("generic", g)
            elif placeholders and (ph := placeholder_reason(v, c.get("attribute"))):
                why = ("placeholder", f"placeholder: {ph}")
        if why is None:
            out.append(c)
            continue
        counts[why[0]] += 1
        rec = {k: x for k, x in c.items() if k != "value"}
        rec.update({"masked": mask(v), "withheld": why[0], "withheld_reason": why[1]})
        out.append(rec)
    return out, {"withheld": counts}


def withheld_verdict(cand: Mapping) -> dict | None:
    """The rules verdict of a candidate that withheld its value (:func:`withhold`): not ok, with
    the candidates stage's reason and the withheld kind as its status; None for any other."""
    if not cand.get("withheld"):
        return None
    return {"ok": False, "reason": str(cand.get("withheld_reason") or cand["withheld"]), "status": cand["withheld"]}


def _is_repeated(s: str) -> bool:
    core = re.sub(r"[\s\-_.()/+]", "", s)
    if len(core) >= 3 and len(set(core)) == 1:
        return True
    # a short unit repeated: abcabcabc, 121212
    for k in range(1, 4):
        if len(core) >= 2 * k + 2 and len(core) % k == 0 and core == core[:k] * (len(core) // k):
            return True
    return False


def _is_sequential(s: str, min_len: int = 6) -> bool:
    """Digits (or letters) running up or down by one, e.g. 123456789, 987654, abcdef."""
    core = re.sub(r"[\s\-_.()/+]", "", s).lower()
    if len(core) < min_len or not (core.isdigit() or core.isalpha()):
        return False
    steps = {ord(b) - ord(a) for a, b in zip(core, core[1:])}
    if core.isdigit():
        steps = {(ord(b) - ord(a)) % 10 for a, b in zip(core, core[1:])}
        return steps <= {1} or steps <= {9}
    return steps <= {1} or steps <= {-1}


def placeholder_reason(value: str, attribute: str | None = None, path: str | Path | None = None) -> str | None:
    """Why ``value`` is a placeholder, or None. ``path``: another list file (default: the shipped one)."""
    ph = load_placeholders(str(path) if path else None)
    key = ph["key"]
    v = value.strip()
    low = v.lower()
    if not v:
        return "empty value"
    if placeholder_hash("values", v, key) in ph["values"]:
        return "well-known placeholder value"
    digits = re.sub(r"\D", "", v)
    if digits and len(digits) >= 12 and placeholder_hash("test_cards", digits, key) in ph["test_cards"]:
        return "well-known test card number"
    if "@" in v:
        domain = low.rsplit("@", 1)[1].strip()
        labels = domain.split(".")
        for i in range(len(labels)):    # the domain itself, then each parent domain
            d = ".".join(labels[i:])
            if placeholder_hash("email_domains", d, key) in ph["email_domains"]:
                return f"reserved/documentation email domain ({d})"
    for name, rx in ph["patterns"]:
        if rx.search(v):
            return f"placeholder pattern {name}"
    if _is_repeated(v):
        return "repeated characters"
    if _is_sequential(v):
        return "sequential characters"
    return None


# ---------------------------------------------------------------- per attribute

def _email(v: str) -> dict:
    why = email_error(v)
    return _result(why is None, why or "valid email syntax")


def _phone(v: str) -> dict:
    why = phone_error(v)
    return _result(False, why) if why else _result(True, f"valid phone number ({phone_region(v)})")


def _credit_card(v: str) -> dict:
    s = v.strip()
    if CVV.match(s):
        return _result(True, "CVV-shaped")
    if EXPIRY.match(s):
        return _result(True, "expiry-shaped (MM/YY)")
    net, why = card_check(s)
    return _result(net is not None, why)


def _identity(v: str) -> dict:
    s = v.strip()
    known = national_id(s)
    if known:
        name, short, valid = known
        return _result(True, f"valid {name}") if valid else _result(False, f"{short}-shaped but invalid")
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9\-/ ]{4,22}[A-Za-z0-9]", s) and re.search(r"\d", s):
        return _result(True, "identifier-shaped (letters/digits, 6-24 chars)")
    return _result(False, "not an identity number shape (6-24 letters/digits with at least one digit)")


def _bank(v: str) -> dict:
    s = v.strip()
    if IBAN_SHAPE.match(s):
        return _result(True, "valid IBAN") if is_iban(s) else _result(False, "IBAN-shaped but checksum fails")
    if BIC_SHAPE.match(s):
        return _result(True, "valid BIC") if is_bic(s) else _result(False, "BIC-shaped but invalid")
    if re.fullmatch(r"[\d\s\-]{6,34}", s):
        n = len(re.sub(r"\D", "", s))
        return _result(6 <= n <= 20, "account/routing number shape" if 6 <= n <= 20 else f"{n} digits is no account number")
    if re.fullmatch(r"[-+]?[$€£¥]?\s?\d[\d,]*(\.\d{1,2})?", s):
        return _result(True, "amount/balance shape")
    if len(s) >= 4 and re.search(r"[A-Za-z]", s):
        return _result(True, "statement text")
    return _result(False, "no banking detail shape")


def _dob(v: str, today: date | None = None) -> dict:
    why = birth_date_error(v, today)
    return _result(why is None, why or "plausible date of birth")


def _high_entropy(v: str, min_len: int, min_entropy: float, what: str) -> dict:
    s = v.strip()
    if vendor_key(s) or HEX64.match(s):
        return _result(True, f"{what} with a known vendor key format")
    if is_jwt(s):
        return _result(True, f"{what} in JWT shape")
    if len(s) < min_len:
        return _result(False, f"{what} too short ({len(s)} < {min_len} chars)")
    if re.search(r"\s", s) and len(s.split()) < 12:
        return _result(False, f"{what} contains spaces")
    if len(s.split()) >= 12 and all(w.isalpha() and w.islower() for w in s.split()):
        return _result(True, "mnemonic seed phrase shape (12+ lowercase words)")
    e = char_entropy(s)
    if e < min_entropy:
        return _result(False, f"low entropy ({e:.2f} < {min_entropy} bits/char)")
    return _result(True, f"high-entropy string ({e:.2f} bits/char, {len(s)} chars)")


def _secret_key(v: str) -> dict:
    return _high_entropy(v, 16, 3.0, "key")


def _auth_token(v: str) -> dict:
    s = v.strip()
    if re.fullmatch(r"\d{4,8}", s):
        return _result(True, "PIN/OTP shape (4-8 digits)")
    return _high_entropy(s, 16, 3.0, "token")


def _password(v: str) -> dict:
    s = v.strip()
    if not 6 <= len(s) <= 128:
        return _result(False, f"password length {len(s)} outside 6..128")
    if re.search(r"\s", s) and len(s.split()) < 3:
        return _result(False, "password contains whitespace")
    classes = sum(bool(re.search(p, s)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    return _result(True, f"password-shaped ({len(s)} chars, {classes} character classes)")


def _username(v: str) -> dict:
    s = v.strip()
    if re.fullmatch(r"[\w.\-@+]{3,40}", s, re.U):
        return _result(True, "user-name shape")
    return _result(False, "not a user name (3-40 letters, digits, . _ - @ +)")


def _name(v: str) -> dict:
    s = v.strip()
    if re.fullmatch(r"[^\W\d_]{2,}", s) and not s.isascii():
        return _result(True, "single-token non-Latin name")
    parts = s.replace(",", " ").split()
    if not 2 <= len(parts) <= 5:
        return _result(False, "a person's name has 2-5 parts")
    if not all(re.fullmatch(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*\.?", p) for p in parts):
        return _result(False, "name parts must be letters")
    if not all(p[0].isupper() for p in parts if p[0].isalpha() and p[0].lower() != p[0].upper()):
        return _result(False, "name parts are not capitalised")
    return _result(True, "person-name shape")


def _address(v: str) -> dict:
    s = v.strip()
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 \-]{2,9}", s) and re.search(r"\d", s):
        return _result(True, "postal-code shape")
    if len(s) < 3 or not re.search(r"[^\W\d_]", s):
        return _result(False, "no letters in the address")
    if re.search(r"\d", s) and len(s) >= 8:
        return _result(True, "street address shape (number and words)")
    if re.fullmatch(r"[^\W\d_][^\W\d_ .'\-]*( [^\W\d_][^\W\d_.'\-]*){0,3}", s):
        return _result(True, "place-name shape")
    return _result(False, "not an address shape")


def _free_text(v: str) -> dict:
    s = v.strip()
    if len(s) < 2 or not re.search(r"[^\W\d_]", s):
        return _result(False, "free text needs at least 2 characters with a letter")
    return _result(True, "free text")


def _biometric(v: str) -> dict:
    s = v.strip()
    if re.fullmatch(r"[0-9a-fA-F]{16,}|[A-Za-z0-9+/=_\-]{24,}", s):
        return _high_entropy(s, 16, 3.0, "biometric template/hash")
    return _free_text(s)


RULES: dict[str, Callable[[str], dict]] = {
    "name": _name,
    "address": _address,
    "email": _email,
    "phone": _phone,
    "date_of_birth": _dob,
    "identity": _identity,
    "medical_record": _free_text,
    "bank_statement": _bank,
    "political": _free_text,
    "password": _password,
    "auth_token": _auth_token,
    "secret_key": _secret_key,
    "credit_card": _credit_card,
    "username": _username,
    "biometric": _biometric,
}


def check(attribute: str, value: str, validity: dict | None = None) -> dict:
    """Structural verdict for one candidate: ``{"ok": bool, "reason": str}``.

    Placeholders fail first (reason names the list entry kind, never the value), then a
    value ExtractPII kept for its key without the attribute's shape (the candidate's
    ``validity`` ``{"ok": False, "reason"}``) fails with that reason, then the attribute's
    format rule decides. Unknown attributes raise ConfigError listing the known.
    """
    rule = RULES.get(attribute)
    if rule is None:
        raise ConfigError(f"no format rule for attribute {attribute!r}; known: {', '.join(sorted(RULES))}")
    if not isinstance(value, str):
        return _result(False, f"value is {type(value).__name__}, not a string")
    why = placeholder_reason(value, attribute)
    if why:
        return _result(False, f"placeholder: {why}")
    if isinstance(validity, dict) and validity.get("ok") is False:
        return _result(False, f"extraction: {validity.get('reason') or 'off its attribute shape'}")
    return rule(value)
