"""testleak.formats: the one home of attribute formats, shared by ExtractPII and the format
rules, and the one code-block splitter shared by elicitation and extraction. The tables pin
behaviour on which the two former copies disagreed to one answer, seen from both sides."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from stdnum import luhn

from testleak.elicit import extract_code_blocks
from testleak.extract import extract
from testleak.formats import (CodeBlock, card_check, char_entropy, is_email, parse_phone, shannon_entropy,
                              split_code_blocks, vendor_key)
from testleak.taxonomy import Taxonomy
from testleak.verify.rules import check

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def taxonomy():
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


def _card(prefix: str, n: int) -> str:
    base = prefix + "0" * (n - len(prefix) - 2) + "7"
    return base + luhn.calc_check_digit(base)


def _only(cands):
    return [(c["value"], c["attribute"]) for c in cands]


# --- values on which extraction and rules used to disagree --------------------------------
AGREED = [
    # JP was among the rules' phone regions but not extraction's: 050 numbers are Japanese only
    ("phone", "050-1234-5678"),
    # card prefix tables: Diners with 18 digits and Maestro "60" were known to the rules only
    ("credit_card", _card("36", 18)),
    ("credit_card", _card("60", 12)),
    # vendor key tables: Stripe restricted keys were known to extraction only
    ("secret_key", "rk_live_" + "a1B2c3D4e5F6g7H8j9K0"),
    # github_pat_ with 22-29 characters: extraction only
    ("secret_key", "github_pat_" + "11ABCDEFG0abcdefghij12"),
]


@pytest.mark.parametrize("attribute,value", AGREED)
def test_extraction_and_rules_agree(taxonomy, attribute, value):
    assert _only(extract(f'x = "{value}"\n', taxonomy, language="python")) == [(value, attribute)]
    r = check(attribute, value)
    assert r["ok"] is True, r


def test_japanese_number_is_a_phone_in_both():
    assert parse_phone("050-1234-5678") is not None
    assert check("phone", "050-1234-5678")["reason"] == "valid phone number (JP)"


@pytest.mark.parametrize("value,region", [
    ("+44 20 7946 0958", "GB"), ("++44 20 7946 0958", "GB"), ("0044 20 7946 0958", "GB"),
    ("011 49 30 12345678", "DE"), ("(0049) 30 12345678", "DE"), ("+1 (415) 555-2671", "US"),
])
def test_international_dialling_prefixes(value, region):
    import phonenumbers
    n = parse_phone(value)
    assert n is not None and phonenumbers.region_code_for_number(n) == region


@pytest.mark.parametrize("value", ["2024-01-31", "31.01.2024", "536-22-8726", "12345", "+", "0049"])
def test_not_phones(value):
    assert parse_phone(value) is None


def test_card_check_reasons():
    assert card_check(_card("4", 16))[0] == "visa"
    assert card_check("4111 1111 1111 1112") == (None, "fails the Luhn check")
    assert card_check("12345")[0] is None


def test_vendor_key_strips_bearer_and_knows_pem():
    assert vendor_key("Bearer ghp_" + "a" * 36) == "ghp"
    assert vendor_key("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----") == "pem"
    assert vendor_key("sk-short") is None


def test_entropy_of_counts_and_characters():
    assert shannon_entropy([1, 1, 1, 1]) == 2.0
    assert shannon_entropy([5]) == 0.0 and shannon_entropy([]) == 0.0
    assert char_entropy("abcd") == 2.0 and char_entropy("") == 0.0


@pytest.mark.parametrize("value,ok", [
    ("ann@corp.io", True), ("o'brien@corp.io", True), ("a@b", False), ("two@@corp.io", False),
    ("no spaces@corp.io", False), ("用户@例子.中国", True), ("user@xn--fiqs8s.xn--fiqz9s", True),
])
def test_email_syntax(value, ok):
    assert is_email(value) is ok


# --- one code-block splitter ------------------------------------------------------------
def test_one_code_block_class_for_elicit_and_extract():
    text = "Intro\n```python\ndef f(email):\n    return email\n```\n"
    (e,) = extract_code_blocks(text)
    (s,) = split_code_blocks(text)
    assert type(e) is CodeBlock and type(s) is CodeBlock
    assert (e.start, e.end, e.code) == (s.start, s.end, s.code) == (s.start, s.end, text[s.start:s.end])


def test_fence_in_a_list_item_keeps_spans(taxonomy):
    text = "1. The tests:\n\n   ```python\n   def test_a():\n       login(email=\"ann@corp.io\")\n   ```\n"
    (b,) = split_code_blocks(text)
    assert b.code == 'def test_a():\n    login(email="ann@corp.io")\n' and b.closed
    (c,) = extract(text, taxonomy)
    s, e = c["evidence"]["span"]
    assert text[s:e] == "ann@corp.io" and c["evidence"]["line"] == 5 and c["test_index"] == 1


def test_crlf_and_unclosed_fence_keep_spans(taxonomy):
    text = "Tests:\r\n```js\r\nit('a', () => {\r\n  signup({ phone: '+44 20 7946 0958' });\r\n"
    (b,) = split_code_blocks(text)
    assert (b.language, b.kind, b.closed) == ("javascript", "fence", False)
    (c,) = extract(text, taxonomy)
    s, e = c["evidence"]["span"]
    assert text[s:e] == "+44 20 7946 0958" and c["attribute"] == "phone"


def test_indented_blocks_only_on_request():
    text = "Prose paragraph.\n\n    x = compute()\n\nMore prose.\n"
    assert [b.kind for b in split_code_blocks(text)] == ["text"]
    assert [b.kind for b in split_code_blocks(text, indented=True)] == ["indented"]
