"""The scoring rules of benchmarks/compare_extractors.py (what counts as found, right, precise),
on outputs written by hand, and detect-secrets run for real on the generated secrets."""

from __future__ import annotations

import sys

from testleak.config import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import compare_extractors as ce  # noqa: E402

IBAN = "DE89 3704 0044 0532 0130 00"
EMAIL = "jane.doe@example.org"
PW = "pw-1234!xy"
KEY = "AKIA" + "ABCDEFGHIJKLMNOP"


def _doc(part="faker-secrets"):
    labelled = [(IBAN, "bank_statement"), (EMAIL, "email"), (PW, "password"), (KEY, "secret_key")]
    placed = {a: {ce.norm(v)} for v, a in labelled}
    return {"part": part, "name": "t", "language": "python", "text": "", "labelled": labelled, "placed": placed}


def test_found_right_partial_and_precision():
    outs = [("DE89370400440532013000", "bank_statement"),   # formatting differs only: found, right
            (EMAIL, None),                                   # returned without an attribute: found, not right
            ("pw-1234", "password"),                         # a part of the password: overlapped, not found
            ("John Smith", "name"),                          # an attribute the part does not place
            (KEY, ce.GENERIC)]                               # "a secret": right for a secret attribute
    s = ce.score([_doc()], [outs])["faker-secrets"]
    assert (s["bank_statement"]["found"], s["bank_statement"]["right"]) == (1, 1)
    assert (s["email"]["found"], s["email"]["right"]) == (1, 0)
    assert (s["password"]["found"], s["password"]["partial"]) == (0, 1)
    assert (s["secret_key"]["found"], s["secret_key"]["right"]) == (1, 1)
    assert (s["password"]["out"], s["password"]["correct"]) == (1, 0)   # the fragment is no placed value
    assert (s["bank_statement"]["out"], s["bank_statement"]["correct"]) == (1, 1)
    assert (s["(other)"]["out"], s["(other)"]["as name"]) == (1, 1)
    assert (s[ce.GENERIC]["out"], s[ce.GENERIC]["correct"]) == (1, 1)
    assert "n" not in s["(other)"]


def test_generic_secret_is_not_right_for_pii():
    s = ce.score([_doc()], [[(EMAIL, ce.GENERIC)]])["faker-secrets"]
    assert (s["email"]["found"], s["email"]["right"]) == (1, 0)


def test_detect_secrets_on_generated_secrets():
    files = ce.secret_files(10, 0)
    assert [k for k, *_ in files] == ["pytest", "jest", "junit", "go", "json"]
    docs = [{"part": "faker-secrets", "name": k, "language": lang, "text": code, "labelled": [], "placed": None}
            for k, lang, code, _ in files]
    outs, spent, unmapped = ce.run_detect_secrets(docs)
    assert spent > 0 and len(outs) == len(docs)
    keys = {r["secret_key"] for _, _, _, rows in files for r in rows}
    found = {v for o in outs for v, _ in o}
    assert keys & found, "detect-secrets found none of the generated vendor keys"
    assert any(a == "secret_key" for o in outs for _, a in o)
