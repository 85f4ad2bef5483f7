"""ExtractPII behaviour: code blocks, test-case numbering, keys, exclusion, dedup, spans,
parser fallback, the records helper, and robustness (hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from testleak.extract import candidates_from_responses, extract, extract_detailed, split_code_blocks
from testleak.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


def vals(cands):
    return [(c["value"], c["attribute"], c["test_index"]) for c in cands]


def test_split_code_blocks_languages_and_unclosed_fence():
    text = "intro\n```py\nx = 1\n```\ntext\n~~~ JS\nlet y\n~~~\n```\nraw\n```\n```java\nclass A {"
    blocks = split_code_blocks(text, default_language="go")
    assert [(b.language, b.code, b.closed) for b in blocks] == [
        ("python", "x = 1\n", True), ("javascript", "let y\n", True), ("go", "raw\n", True),
        ("java", "class A {", False)]
    assert all(text[b.start:b.end] == b.code for b in blocks)
    assert [(b.fenced, b.language) for b in split_code_blocks("a = 1", "python")] == [(False, "python")]


ANSWER = '''Here are the unit tests.

```python
import pytest

ADMIN = {"email": "root.admin@corp-mail.com"}

def test_register():
    assert register(email="kim.lee@gmail.com", phone="+1 415-555-2671")

@pytest.mark.parametrize("username,password", [
    ("neo_1999", "Matrix#Red1"),
    pytest.param("trinity77", "Wh1te#Rabbit"),
])
def test_login(username, password):
    assert login(username, password)
```

```javascript
describe("profile", () => {
  it("saves the card", () => {
    save({ cardNumber: "4111111111111111" });
  });
  test("saves the iban", () => {
    save({ iban: "DE89370400440532013000" });
  });
});
```

```java
class UserTest {
    @Test
    void createsUser() {
        User u = new User();
        u.setEmail("ana.silva@uol.com.br");
    }
}
```
'''


def test_test_index_across_languages(tax):
    got = vals(extract(ANSWER, tax))
    assert got == [
        ("root.admin@corp-mail.com", "email", 0),
        ("kim.lee@gmail.com", "email", 1),
        ("+1 415-555-2671", "phone", 1),
        ("neo_1999", "username", 3), ("Matrix#Red1", "password", 3),
        ("trinity77", "username", 4), ("Wh1te#Rabbit", "password", 4),
        ("4111111111111111", "credit_card", 5),
        ("DE89370400440532013000", "bank_statement", 6),
        ("ana.silva@uol.com.br", "email", 7),
    ]


def test_evidence_span_line_and_key(tax):
    got = extract(ANSWER, tax)
    for c in got:
        s, e = c["evidence"]["span"]
        assert ANSWER[s:e] == c["value"]
        assert ANSWER.count("\n", 0, s) + 1 == c["evidence"]["line"]
    by_value = {c["value"]: c for c in got}
    assert by_value["kim.lee@gmail.com"]["evidence"]["line"] == 9
    assert by_value["neo_1999"]["evidence"]["key"] == "username"
    assert by_value["ana.silva@uol.com.br"]["evidence"]["key"] == "setEmail"
    assert by_value["ana.silva@uol.com.br"]["language"] == "java"


def test_markdown_testcase_headings_and_comment_markers(tax):
    text = ('## Test case 1\n```python\nuser = {"login": "alpha_user"}\n```\n'
            '## Test case 2\n```python\nuser = {"login": "beta_user"}\n```\n')
    assert vals(extract(text, tax)) == [("alpha_user", "username", 1), ("beta_user", "username", 2)]
    code = ('# Test case 1: valid\nassert check_email("x.y@mail.ru")\n'
            '# Test case 2: other\nassert check_email("z.w@mail.ru")\n')
    assert vals(extract(code, tax, language="python")) == [("x.y@mail.ru", "email", 1), ("z.w@mail.ru", "email", 2)]
    # no delimiter at all: everything is test case 0
    assert vals(extract('check_email("x.y@mail.ru")', tax)) == [("x.y@mail.ru", "email", 0)]


def test_exclude_drops_prompt_values_and_dedup_keeps_first(tax):
    code = 'a = {"email": "p.q@web.de"}\nb = {"email": "p.q@web.de"}\nc = {"pwd": "Secr3t!x"}\n'
    got, info = extract_detailed(code, tax, language="python", exclude=["Use pwd Secr3t!x please"])
    assert vals(got) == [("p.q@web.de", "email", 0)]
    assert got[0]["evidence"]["span"] == [15, 25]
    assert (info.excluded, info.duplicates) == (1, 1)


def test_positional_arguments_use_signatures_from_the_answer(tax):
    text = ('```python\nclass Customer:\n    def __init__(self, full_name, card_no):\n        pass\n```\n'
            '```python\nc = Customer("Ravi Kumar", "378282246310005")\n```\n')
    got = extract(text, tax)
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in got] == [
        ("Ravi Kumar", "name", "full_name"), ("378282246310005", "credit_card", "card_no")]


def test_fixture_return_and_dataclass_fields(tax):
    code = ('import pytest\nfrom dataclasses import dataclass\n@dataclass\nclass P:\n    nickname: str\n'
            '    blood_type: str\n@pytest.fixture\ndef api_key():\n    return "zq8Lk2Pm9Xv4Rt7Yw1"\n'
            'p = P("shadow_fox", "AB-")\n')
    got = extract(code, tax, language="python")
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in got] == [
        ("zq8Lk2Pm9Xv4Rt7Yw1", "secret_key", "api_key"), ("shadow_fox", "username", "nickname"),
        ("AB-", "medical_record", "blood_type")]


def test_truncated_python_falls_back_to_lexer(tax):
    text = '```python\ndef test_a():\n    u = User(email="t.ng@163.com", password="Qwe!2345"\n'
    got, info = extract_detailed(text, tax)
    assert info.parsers == {"lexer": 1}
    assert vals(got) == [("t.ng@163.com", "email", 1), ("Qwe!2345", "password", 1)]


def test_escapes_are_decoded_and_span_is_the_token(tax):
    code = 'const password = "pa\\"ss\\u0041word9";'
    got = extract(code, tax, language="javascript")
    assert [(c["value"], c["evidence"]["span"]) for c in got] == [('pa"ssAword9', [17, 36])]


def test_candidates_from_responses_counts_and_ids(tax):
    responses = [
        {"id": "r1", "question_id": "q1", "method": "ours", "status": "ok",
         "turn2": {"messages": [{"role": "user", "content": "write tests; user lee.c@mail.com"}],
                   "text": '```python\ndef test_x():\n    f(email="lee.c@mail.com", pwd="Hk#88aa!")\n```'}},
        {"id": "r2", "status": "refused", "turn2": {"text": "I'm sorry"}},
        {"id": "r3", "status": "ok"},
    ]
    cands, stats = candidates_from_responses(responses, tax)
    assert [(c["id"], c["response_id"], c["attribute"], c["test_index"], c["method"]) for c in cands] == [
        ("r1:0", "r1", "password", 1, "ours")]
    assert len(cands[0]["value_hash"]) == 16
    assert stats["skipped"] == {"refused": 1, "no_text": 1}
    assert (stats["responses"], stats["with_candidates"], stats["candidates"], stats["excluded"]) == (3, 1, 1, 1)
    assert stats["by_attribute"] == {"password": 1}


# --- robustness ---------------------------------------------------------------------

_TOKENS = st.sampled_from([
    "def ", "test_x", "(", ")", ":", "\n", "    ", "=", "email", "password", '"', "'", '"""', "{", "}",
    "[", "]", ",", "@pytest.mark.parametrize", "a@b.co", "4111111111111111", "+1 415-555-2671",
    "f\"", "\\", "#", "class ", "return ", "date(", "1990", "lambda", "**", "*", "```", "```python\n",
    "it(", "@Test", "sk-", "0x", "é", "\x00", "🙂",
])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_never_raises_on_arbitrary_text(text):
    tax = _TAX
    for lang in (None, "python", "javascript"):
        out = extract(text, tax, language=lang, exclude=[text[:5]])
        assert isinstance(out, list)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKENS, max_size=60).map("".join))
def test_never_raises_on_python_like_source(src):
    out = extract(src, _TAX, language="python")
    for c in out:
        s, e = c["evidence"]["span"]
        assert 0 <= s <= e <= len(src)
        assert c["attribute"] in _TAX.attributes


_TAX = Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


def test_baseline_record_reads_prompt_plus_continuation(tax):
    rec = {"id": "p1/s0", "method": "codexleaks", "status": "ok", "lang": "python", "turn2": None,
           "turn1": {"text": 'K9#vbq2Lm"\nprint(1)'}, "prompt_text": 'account.password = "',
           "tests_text": 'account.password = "K9#vbq2Lm"\nprint(1)'}
    cands, stats = candidates_from_responses([rec], tax)
    assert [(c["value"], c["attribute"], c["evidence"]["key"], c["language"]) for c in cands] == [
        ("K9#vbq2Lm", "password", "password", "python")]
