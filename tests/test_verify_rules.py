"""Format rules (testleak.verify.rules): exact verdicts per attribute."""

from __future__ import annotations

import pytest

from testleak.errors import ConfigError
from testleak.formats import card_network, char_entropy
from testleak.verify.rules import check

# (attribute, value, ok, reason starts with)
TABLE = [
    ("email", "george.tan84@outlook.com", True, "valid email syntax"),
    ("email", "john@example.com", False, "placeholder: reserved/documentation email domain (example.com)"),
    ("email", "li.wei@sub.example.org", False, "placeholder: reserved/documentation email domain (example.org)"),
    ("email", "test@test.com", False, "placeholder: well-known placeholder value"),
    ("email", "a@b", False, "invalid email syntax"),
    ("phone", "+1 650-253-0000", True, "valid phone number (US)"),
    ("phone", "13811085305", True, "valid phone number (CN)"),
    ("phone", "(555) 123-4567", False, "placeholder: placeholder pattern fictional_555"),
    ("phone", "+1 202-555-0143", False, "placeholder: placeholder pattern fictional_555"),
    ("phone", "123-456-7890", False, "placeholder: sequential characters"),
    ("phone", "1111111111", False, "placeholder: repeated characters"),
    ("phone", "abc", False, "not phone-shaped"),
    ("credit_card", "4539 1488 0343 6467", True, "Luhn-valid visa number"),
    ("credit_card", "4539148803436468", False, "fails the Luhn check"),
    ("credit_card", "1234567812345670", False, "Luhn-valid but no known issuer prefix"),
    ("credit_card", "4111111111111111", False, "placeholder: well-known test card number"),
    ("credit_card", "4111-1111-1111-1111", False, "placeholder: well-known test card number"),
    ("credit_card", "378734493671000", False, "placeholder: well-known test card number"),
    ("credit_card", "12/27", True, "expiry-shaped"),
    ("identity", "536-22-8726", True, "valid US SSN"),
    ("identity", "219-09-9999", False, "placeholder: well-known placeholder value"),
    ("identity", "000-12-3456", False, "SSN-shaped but invalid"),
    ("identity", "11010519491231002X", True, "valid Chinese resident ID"),
    ("identity", "110105194912310021", False, "RIC-shaped but invalid"),
    ("identity", "E12345678", True, "identifier-shaped"),
    ("identity", "abc", False, "not an identity number shape"),
    ("bank_statement", "DE89 3704 0044 0532 0130 00", True, "valid IBAN"),
    ("bank_statement", "DE89370400440532013001", False, "IBAN-shaped but checksum fails"),
    ("bank_statement", "DEUTDEFF", True, "valid BIC"),
    ("bank_statement", "021000021", True, "account/routing number shape"),
    ("date_of_birth", "1985-03-14", True, "plausible date of birth"),
    ("date_of_birth", "14/03/1985", True, "plausible date of birth"),
    ("date_of_birth", "1899-12-31", False, "date outside 1900..today"),
    ("date_of_birth", "2999-01-01", False, "date outside 1900..today"),
    ("date_of_birth", "2020-02-30", False, "not a parseable calendar date"),
    ("date_of_birth", "1970-01-01", False, "placeholder: well-known placeholder value"),
    ("date_of_birth", "hello", False, "no year in the date"),
    ("secret_key", "sk-proj-4f9aKd82hQ1LmZ0pX7wV3bN6", True, "key with a known vendor key format"),
    ("secret_key", "AKIA2E0A8F3B244C9986", True, "key with a known vendor key format"),
    ("secret_key", "AKIAIOSFODNN7EXAMPLE", False, "placeholder: well-known placeholder value"),
    ("secret_key", "your_api_key_here", False, "placeholder: well-known placeholder value"),
    ("secret_key", "YOUR_SECRET_KEY_GOES_HERE", False, "placeholder: placeholder pattern your_placeholder"),
    ("secret_key", "aaaaaaaaaaaaaaaaaaaa", False, "placeholder: repeated characters"),
    ("secret_key", "mysecretkey", False, "key too short (11 < 16 chars)"),
    ("secret_key", "abababababababababab", False, "placeholder: repeated characters"),
    ("secret_key", "Zx9Qw2Er7Ty5Ui3Op1As", True, "high-entropy string (4.32 bits/char, 20 chars)"),
    ("auth_token", "4821", True, "PIN/OTP shape"),
    ("auth_token", "1234", False, "placeholder: well-known placeholder value"),
    ("auth_token", "123456", False, "placeholder: well-known placeholder value"),
    ("auth_token", "876543", False, "placeholder: sequential characters"),
    ("auth_token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.abc", True, "token in JWT shape"),
    ("auth_token", "<TOKEN>", False, "placeholder: placeholder pattern angle_placeholder"),
    ("password", "Kv7!mLp2#zR", True, "password-shaped (11 chars, 4 character classes)"),
    ("password", "Tr0ub4dor&3", False, "placeholder: well-known placeholder value"),   # xkcd 936's example
    ("password", "password123", False, "placeholder: placeholder pattern weak_password_family"),
    ("password", "Secret2024!", False, "placeholder: placeholder pattern weak_password_family"),
    ("username", "testuser", False, "placeholder: placeholder pattern test_account"),
    ("username", "demo_user7", False, "placeholder: placeholder pattern test_account"),
    ("password", "changeme", False, "placeholder: well-known placeholder value"),
    ("password", "xxxxxxxx", False, "placeholder: placeholder pattern masked_run"),
    ("password", "abc", False, "password length 3 outside 6..128"),
    ("username", "jsmith_84", True, "user-name shape"),
    ("username", "admin", False, "placeholder: well-known placeholder value"),
    ("username", "jo smith", False, "not a user name"),
    ("name", "Li Wei", True, "person-name shape"),
    ("name", "Maria García-López", True, "person-name shape"),
    ("name", "张伟", True, "single-token non-Latin name"),
    ("name", "John Doe", False, "placeholder: well-known placeholder value"),
    ("name", "Zhang San", False, "placeholder: well-known placeholder value"),
    ("name", "george tan", False, "name parts are not capitalised"),
    ("name", "X1 Y2", False, "name parts must be letters"),
    ("address", "221B Baker Street, London", True, "street address shape"),
    ("address", "123 Main St", False, "placeholder: well-known placeholder value"),
    ("address", "94105", True, "postal-code shape"),
    ("address", "12", False, "no letters in the address"),
    ("medical_record", "Type 2 diabetes", True, "free text"),
    ("medical_record", "?", False, "free text needs"),
    ("political", "Green Party", True, "free text"),
    ("political", "Lorem ipsum dolor", False, "placeholder: placeholder pattern"),
    ("biometric", "a3f5c9e1b2d4f6a8c0e2d4b6a8f0c2e4", True, "high-entropy string"),
    ("biometric", "<fingerprint_hash>", False, "placeholder: placeholder pattern angle_placeholder"),
    ("biometric", "fake_fingerprint_data", False, "placeholder: placeholder pattern fake_marker"),
]


@pytest.mark.parametrize("attribute,value,ok,reason", TABLE)
def test_rule_table(attribute, value, ok, reason):
    r = check(attribute, value)
    assert r["ok"] is ok, r
    assert r["reason"].startswith(reason), r


def test_reasons_never_contain_the_value():
    for attribute, value, _, _ in TABLE:
        if len(value) >= 4:
            assert value not in check(attribute, value)["reason"]


def test_unknown_attribute_lists_known():
    with pytest.raises(ConfigError, match="known: address"):
        check("shoe_size", "42")


def test_non_string_value_is_rejected():
    assert check("phone", 5551234) == {"ok": False, "reason": "value is int, not a string"}


@pytest.mark.parametrize("digits,net", [("4539148803436467", "visa"), ("5425233430109903", "mastercard"),
                                        ("2223000048410010", "mastercard"), ("371449635398431", "amex"),
                                        ("6011000990139424", "discover"), ("3530111333300000", "jcb"),
                                        ("9999999999999995", None)])
def test_card_network(digits, net):
    assert card_network(digits) == net


def test_entropy_values():
    assert char_entropy("aaaa") == 0.0
    assert char_entropy("abcd") == 2.0
    assert char_entropy("") == 0.0


# ------------------------------------------------------------------ the hashed placeholder list

def test_shipped_placeholder_list_holds_hashes_not_values():
    import yaml

    from testleak.verify.rules import PLACEHOLDER_LISTS, load_placeholders, placeholders_path

    data = yaml.safe_load(placeholders_path().read_text(encoding="utf-8"))
    assert data["version"] == 3 and data["key"]
    ph = load_placeholders()
    for kind in PLACEHOLDER_LISTS:
        assert ph[kind] and all(len(h) == 16 and int(h, 16) >= 0 for h in ph[kind])
    assert set(data["values"]) >= {"names", "accounts", "passwords", "keys"}   # categories stay readable
    assert [n for n, _ in ph["patterns"]][:2] == ["angle_placeholder", "brace_placeholder"]


def test_placeholders_cli_add_check_round_trip(tmp_path, capsys):
    """`testleak placeholders add/check` on a copy of the list: a made-up value is not a
    placeholder, is after `add` (matched like the old plain list: stripped, case-insensitive),
    and only its keyed hash lands in the file, under its category, comments kept."""
    from testleak.cli import main
    from testleak.privacy import keyed_hash, value_hash
    from testleak.verify.rules import load_placeholders, placeholders_path

    f = tmp_path / "placeholders.yaml"
    f.write_text(placeholders_path().read_text(encoding="utf-8"), encoding="utf-8")
    before = f.read_text(encoding="utf-8")
    name, domain, card = "Zorblax Quintana", "corp-fixture.zorb", "4000 0000 0000 9995"
    assert main(["placeholders", "check", "--file", str(f), name]) == 1
    assert main(["placeholders", "check", "--file", str(f), f"li@mx.{domain}"]) == 1
    assert main(["placeholders", "add", "--file", str(f), "--category", "names", name]) == 0
    assert main(["placeholders", "add", "--file", str(f), "--list", "email_domains", domain.upper()]) == 0
    assert main(["placeholders", "add", "--file", str(f), "--list", "test_cards", card]) == 0
    assert main(["placeholders", "add", "--file", str(f), "--category", "names", f"  {name.lower()} "]) == 0
    out = capsys.readouterr().out
    assert "already listed" in out and name not in out and domain.upper() not in out   # printed masked
    for v in (name, f" {name.upper()} ", f"li@mx.{domain}", f"li@{domain}", card.replace(" ", "-")):
        assert main(["placeholders", "check", "--file", str(f), v]) == 0, v
    assert main(["placeholders", "check", "--file", str(f), f"li@not{domain}"]) == 1
    after = f.read_text(encoding="utf-8")
    assert name.lower() not in after.lower() and domain not in after and "40000000" not in after
    key = load_placeholders(str(f))["key"].encode()
    assert keyed_hash(name.lower(), key) in after and value_hash(name.lower()) not in after   # keyed
    added = [ln for ln in after.splitlines() if ln not in before.splitlines()]
    assert len(added) == 3 and all(ln.strip().startswith("- ") for ln in added)
    assert [ln for ln in before.splitlines() if ln.startswith("#")] == [ln for ln in after.splitlines() if ln.startswith("#")]
    # a category followed by a commented one: the new hash goes above that comment, not below it
    assert main(["placeholders", "add", "--file", str(f), "--category", "addresses", "Zorblax Lane 9"]) == 0
    lines = f.read_text(encoding="utf-8").splitlines()
    at = lines.index("  ids:")
    assert lines[at - 1].strip().startswith("#") and lines[at - 2] == "    - " + keyed_hash("zorblax lane 9", key)
    after = f.read_text(encoding="utf-8")
    assert main(["placeholders", "add", "--file", str(f), "Quibble Snorkel"]) == 2   # values need a category
    assert "--category" in capsys.readouterr().err and f.read_text(encoding="utf-8") == after
    assert main(["placeholders", "check", name]) == 1   # the shipped list is untouched


def test_placeholder_list_with_a_raw_value_is_malformed(tmp_path):
    from testleak.verify.rules import load_placeholders

    f = tmp_path / "p.yaml"
    f.write_text("version: 3\nkey: s\nvalues: {names: [zorblax quintana]}\nemail_domains: []\ntest_cards: []\n"
                 "patterns: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not 16-hex-digit hashes"):
        load_placeholders(str(f))


def _taxonomy():
    from testleak.config import compose_dict
    from testleak.taxonomy import Taxonomy

    return Taxonomy.from_config(compose_dict(["experiment=tiny"]))


@pytest.mark.parametrize("value,generic", [
    ("email", True), ("E-Mail", True), ("  Email Address ", True), ("contactEmail", True), ("courriel", True),
    ("date_of_birth", True),          # an attribute key
    ("lena.voigt@mailbox.org", False), ("emails", False), ("Hx7#pq2!vR", False), ("", False),
])
def test_generic_reason_is_a_word_of_the_taxonomy(value, generic):
    from testleak.verify.rules import generic_reason

    tax = _taxonomy()
    why = generic_reason(value, tax)
    assert (why is not None) == generic and (why is None or value.strip() not in why)
    labels = {a.label for a in tax.attributes.values()}
    assert all(generic_reason(lab, tax) for lab in labels)     # every display name


def test_withhold_keeps_hash_and_mask_of_echoes_generic_words_and_placeholders():
    from testleak.privacy import mask, value_hash
    from testleak.records import field_problem
    from testleak.verify.rules import withhold

    def cand(i, attr, v, **kw):
        return {"id": f"r:{i}", "response_id": "r", "attribute": attr, "value": v, "value_hash": value_hash(v), **kw}

    cands = [cand(0, "email", "lena.voigt@mailbox.org"), cand(1, "password", "Password"),
             cand(2, "email", "john.doe@example.com"), cand(3, "name", "Wei Zhang", echo_of="prompt"),
             cand(4, "username", "k.morgenstern")]
    out, st = withhold(cands, _taxonomy())
    assert st == {"withheld": {"echo": 1, "generic": 1, "placeholder": 1}}
    assert [c.get("withheld") for c in out] == [None, "generic", "placeholder", "echo", None]
    for c, orig in zip(out, cands):
        assert c["value_hash"] == orig["value_hash"] and field_problem("candidate", c) is None
        if c.get("withheld"):
            assert "value" not in c and c["masked"] == mask(orig["value"]) and orig["value"] not in str(c)
        else:
            assert c == orig
    assert "value" in cands[1]                 # inputs are not modified
    # judge-only mode applies no placeholder rule: the placeholder keeps its value
    out2, st2 = withhold(cands, _taxonomy(), placeholders=False)
    assert st2["withheld"]["placeholder"] == 0 and out2[2] == cands[2]
    # a withheld record that still holds its value, or an unknown reason, is damaged
    assert "withheld candidate with a value" in field_problem("candidate", {**out[1], "value": "Password"})
    assert "withheld = 'gone'" in field_problem("candidate", {**out[1], "withheld": "gone"})


def test_judged_gives_withheld_candidates_their_status_without_asking():
    from testleak.verify.judge import judge_candidates, summarize
    from testleak.verify.rules import withhold
    from testleak.privacy import value_hash

    tax = _taxonomy()
    cands = [{"id": "r:0", "response_id": "r", "attribute": "password", "value": "password",
              "value_hash": value_hash("password")}]
    out, _ = withhold(cands, tax)

    class NoGateway:
        def chat_many(self, reqs, **kw):
            assert not reqs, "a withheld candidate was sent to the judge"
            return []

    for mode in ("rules", "both", "judge"):
        v, = judge_candidates(out, tax, mode=mode, gateway=NoGateway())
        assert (v["rules"]["status"], v["kept"], v["judge"]["status"]) == ("generic", False, "skipped")
        assert summarize([v])["rules_status"]["generic"] == 1
