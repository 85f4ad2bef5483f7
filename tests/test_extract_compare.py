"""ExtractPII's fifth round: what a literal is compared with (a name, a call's result, a
transform's output), assertion messages and prompts that are no values, values a comment or a
test's name quotes after their attribute, lists of field labels, character sets. One table per
rule; every value is invented."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testleak.extract import extract
from testleak.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


def got(tax, code, lang):
    return sorted((c["value"], c["attribute"]) for c in extract(code, tax, language=lang))


# C-like comparisons: the literal takes the other operand's name, or the callee's for a call's result
COMPARISONS = [
    ("csharp", 'Debug.Assert(GenerateSecretKey() == "Hq7Lm2xZ");', [("Hq7Lm2xZ", "secret_key")]),
    ("csharp", 'return "Zr9!pass".Equals(userPassword);', [("Zr9!pass", "password")]),
    ("java", 'if (token.equals("tk_4f8a9")) { ok(); }', [("tk_4f8a9", "auth_token")]),
    ("javascript", 'if (user.getUsername() === "mo_k77") { go(); }', [("mo_k77", "username")]),
    ("javascript", 'console.assert(api_key !== "kq82LmZx");', [("kq82LmZx", "secret_key")]),
    # a name or call that says nothing keeps the literal keyless
    ("javascript", 'if (mode === "Hq7Lm2xZ") { go(); }', []),
]


@pytest.mark.parametrize("lang,code,expected", COMPARISONS, ids=["call-result", "equals-arg", "receiver-equals",
                                                                  "getter", "not-equal", "no-name"])
def test_a_compared_literal_takes_the_other_operands_name(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# equality assertions whose other argument is a call: the callee's name (both parsers)
CALL_RESULTS = [
    ("python", 'self.assertEqual(generate_api_key(), "kq82LmZx")', [("kq82LmZx", "secret_key")]),
    ("python", 'self.assertEqual(generate_password("mo_k77"), "Pl4x!Tr9")', [("Pl4x!Tr9", "password")]),
    ("java", 'assertEquals("Pl4x!Tr9", generatePassword("mo_k77"));', [("Pl4x!Tr9", "password")]),
]


@pytest.mark.parametrize("lang,code,expected", CALL_RESULTS, ids=["python-no-args", "python-args", "java"])
def test_an_asserted_call_result_takes_the_callees_name(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# what a transform returns is derived data: a digest compared with it is no secret
TRANSFORMED = [
    ("csharp", 'Debug.Assert(HashPassword("Qw9!xLp") == "9c1f0a7e5b3d2c4a6e8f0b1d3c5a7e9f1b3d5c7a9e1f3b5d7c9a1e3f5b7d9c1a");',
     [("Qw9!xLp", "password")]),
    ("python", 'assert hash_password("Qw9!xLp") == "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAq7"', [("Qw9!xLp", "password")]),
    ("javascript", 'console.assert(encryptedCard === "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MAq7");', []),
    # a self-certifying shape still wins: a JWT compared with an encrypted token is a token
    ("python", 'assert encrypted_token == "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"',
     [("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", "auth_token")]),
]


@pytest.mark.parametrize("lang,code,expected", TRANSFORMED, ids=["csharp-hash", "python-hash", "encrypted-name", "jwt"])
def test_a_transforms_output_is_derived_data(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


def test_a_sole_argument_takes_the_parameter_name_of_the_signature(tax):
    code = ('public static bool IsAuthorized(string authToken) { return authToken != null; }\n'
            'var ok = IsAuthorized("tk_live_x9q");\n')
    assert got(tax, code, "csharp") == [("tk_live_x9q", "auth_token")]


# text that asks for or explains a value is no value
NOT_VALUES = [
    ("javascript", 'console.assert(ok === true, "The secret key is not as expected.");', []),
    ("csharp", 'Debug.Assert(valid, "Password check failed for Zr9!pass");', []),
    ("python", 'password = input("Enter your password: ")', []),
    ("javascript", 'const pwd = prompt("Your password please");', []),
    ("python", 'fields = ["Address Line 1", "City", "State", "Zip Code", "Employee Photo"]', []),
    ("java", 'String customerEmail = "<Customer Email>";', []),
    ("python", 'chars = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"', []),
    # a field name opening a call or a tuple still keys the value after it
    ("java", 'm.put("username", "mo_k77");', [("mo_k77", "username")]),
]


@pytest.mark.parametrize("lang,code,expected", NOT_VALUES, ids=["assert-message", "debug-message", "input-prompt",
                                                                 "js-prompt", "field-labels", "slot", "charset",
                                                                 "put-pair"])
def test_messages_prompts_labels_and_charsets_are_no_values(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# values quoted after the attribute they are: trailing comments, test names, comments
MENTIONS = [
    ("python", 'CASES = [\n    ("ab", "zq81x"),  # \'ab\' as the password\n]\n',
     [("ab", "password"), ("zq81x", "password")]),
    ("javascript", 'it("rejects the username \'mo_k77\'", () => { expect(f()).toBe(false); });',
     [("mo_k77", "username")]),
    ("javascript", "// a user with identity '884213570'\nconst u = make();\n", [("884213570", "identity")]),
    ("python", '# the label "Important" is shown\nx = 1\n', []),
]


@pytest.mark.parametrize("lang,code,expected", MENTIONS, ids=["comment-after", "test-name", "comment", "no-attribute"])
def test_a_value_quoted_after_its_attribute(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# vital signs are medical data; the generic words of their keys name nothing alone
MEDICAL = [
    ("python", 'systolic_pressure = "Stable 120/80 mmHg"', [("Stable 120/80 mmHg", "medical_record")]),
    ("python", 'heart_rate = "72 BPM"', [("72 BPM", "medical_record")]),
    ("python", 'heart = "red heart"\nrate = "5 per min"\n', []),
]


@pytest.mark.parametrize("lang,code,expected", MEDICAL, ids=["pressure", "heart-rate", "generic-words"])
def test_vital_sign_keys(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# round 6: a placeholder spelling out its attribute, dates under statement and record keys, and
# the signature before a value read as a field name
ROUND6 = [
    ("csharp", 'byte[] k = Encoding.UTF8.GetBytes("your_private_key");', [("your_private_key", "secret_key")]),
    ("python", 'expected = "YOUR-AUTH-TOKEN-HERE"', [("YOUR-AUTH-TOKEN-HERE", "auth_token")]),
    ("python", 'answer = input("Enter your password: ")\nnote = "your text here"\n', []),
    ("csharp", 'var bankStatements = new List<string> { "2023-10-15 09:00 AM", "Rent 1200.00" };',
     [("Rent 1200.00", "bank_statement")]),
    ("java", 'card.setExpiryDate("2029-05-31");', [("2029-05-31", "credit_card")]),
    ("csharp", 'static bool Login(string username, string password) { return true; }\n'
               'Debug.Assert(Login("admin", "Vq8!mLz2") == true);\n', [("Vq8!mLz2", "password"), ("admin", "username")]),
]


@pytest.mark.parametrize("lang,code,expected", ROUND6, ids=["named-placeholder", "named-slug", "prompts-and-prose",
                                                             "statement-date", "expiry-date", "signature-first"])
def test_round6_rules(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# round 7: a person's full name with no key (a given name first, from Faker's lists), the
# Authorization header, a digest under a hash-named key, dotted numbers that are no phone
ROUND7 = [
    ("java", 'new PayrollRecord(new Date(), "Marta Quell", 5000.00);', [("Marta Quell", "name")]),
    ("csharp", 'var u = new User("Jorge Bastián Oyelaran", "4666 1760 3137 2159");',
     [("4666 1760 3137 2159", "credit_card"), ("Jorge Bastián Oyelaran", "name")]),
    # common words, one word, other scripts and a thing-naming key are no keyless names
    ("python", 'title = "Edit Player Details"\nlabel = ("May Day", "Summer")\nop_name = "Ilse Quell"\n', []),
    ("python", 's = "Marta Quell的生日"', []),
    ("csharp", 'client.DefaultRequestHeaders.Add("Authorization", "Bearer qT7mZ2xK9pL4");',
     [("qT7mZ2xK9pL4", "auth_token")]),  # the header's credential (tests/test_extract_embedded.py)
    ("csharp", 'string expectedHash = "9c1f0a7e5b3d2c4a6e8f0b1d3c5a7e9f1b3d5c7a9e1f3b5d7c9a1e3f5b7d9c1a";', []),
    ("csharp", 'seen.Add("213.245.117", DateTime.Now);\nvar host = "10.20.30.40";\nvar v = "+44 20 7946 0958";\n',
     [("+44 20 7946 0958", "phone")]),
]


@pytest.mark.parametrize("lang,code,expected", ROUND7, ids=["positional-name", "constructor-name", "common-words",
                                                             "other-script", "authorization-header", "hash-key",
                                                             "dotted-numbers"])
def test_round7_rules(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# round 8: a mapping's keys hold no value, assertion messages in three-argument equality
# assertions, typeof comparisons, printed labels, a password qualified by another attribute,
# places people live in
ROUND8 = [
    ("javascript", "const account = {\n  'name': 'Astor Quell',\n  'account_type': t,\n  'created_at': now,\n};",
     [("Astor Quell", "name")]),
    ("java", 'assertEquals(acct.getPhoneNumber(), expected, "The phone number should be updated.");\n'
             'assertEquals("The username should match", "mo_k77", acct.getUsername());\n'
             'assertEquals("mo_k77", acct.getUsername());\n', [("mo_k77", "username")]),
    ("csharp", 'Assert.AreEqual(expected, account.Email, "The email should be saved");', []),
    ("javascript", "console.assert(typeof token === 'string');\nif ('undefined' !== typeof password) {}", []),
    ("csharp", 'string transaction = "Stored: " + transactionId;\nstring password = "Password:" + pw;', []),
    ("python", 'swift_password = "Kq82!lmz"\nbank_email = "ann@corp.io"\nidentity_card = "884213570"\n',
     [("884213570", "identity"), ("Kq82!lmz", "password"), ("ann@corp.io", "email")]),
    ("python", 'location = "Porto, Portugal"\nbirthplace = "Leeds"\nstreet_name = "Quell Lane"\n',
     [("Leeds", "address"), ("Porto, Portugal", "address"), ("Quell Lane", "address")]),
]


@pytest.mark.parametrize("lang,code,expected", ROUND8, ids=["mapping-keys", "junit-messages", "nunit-message", "typeof",
                                                             "printed-labels", "qualified-password", "places"])
def test_round8_rules(tax, lang, code, expected):
    assert got(tax, code, lang) == expected
