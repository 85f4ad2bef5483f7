"""ExtractPII round 9: keys from how the code uses a value (testleak/extract/usekeys.py) and
the values a key does not make a value (a stored hash, a message naming its secret), one table
per kind; each also shows the case the rule must leave alone."""

from __future__ import annotations

import pytest

from testleak.extract import extract


def got(taxonomy, code, lang, context=()):
    return [(c["value"], c["attribute"]) for c in extract(code, taxonomy, language=lang, context=context)]


CS_UNDER_TEST = "class Game {\n  public static bool IsValidUsername(string username) { return true; }\n" \
                "  public static string Store(string data, string secret) { return data; }\n}"
PY_UNDER_TEST = "def check_login(user, pw):\n    return True\n\ndef hash_password(raw):\n    return raw\n"

# a variable passed, as a whole argument, to a function of the code under test
CALL_SITES = [
    # the function's name names the attribute (its parameter does too here)
    ("csharp", 'string test1 = "kim_0457";\nConsole.WriteLine($"Got: {IsValidUsername(test1)}");',
     CS_UNDER_TEST, [("kim_0457", "username")]),
    # the parameter at that position names it, the function does not
    ("csharp", 'string a = "note";\nstring b = "Qm7tR2vX9pL4";\nStore(a, b);', CS_UNDER_TEST,
     [("Qm7tR2vX9pL4", "secret_key")]),
    # Python: positional parameter names say nothing, the function's name does
    ("python", 'raw1 = "Plum#Tree44"\nassert hash_password(raw1) != raw1\n', PY_UNDER_TEST,
     [("Plum#Tree44", "password")]),
    # part of an argument only: no binding
    ("python", 'raw1 = "Plum#Tree44"\nassert hash_password(raw1 + "x") != raw1\n', PY_UNDER_TEST, []),
    # a function the code under test does not define: no binding
    ("python", 'raw1 = "Plum#Tree44"\nassert hash_password(raw1) != raw1\n', "", []),
    # a key that names an attribute keeps it
    ("python", 'email = "ann.lee@mail.invalid"\ncheck_login(email, "x")\n', PY_UNDER_TEST,
     [("ann.lee@mail.invalid", "email")]),
]


@pytest.mark.parametrize("lang,code,under_test,expected", CALL_SITES)
def test_call_sites_of_the_code_under_test_name_a_variables_value(taxonomy, lang, code, under_test, expected):
    assert got(taxonomy, code, lang, context=[under_test] if under_test else ()) == expected


BARE_IDS = [
    # an id beside a person's fields is that person's identity number
    ("csharp", 'var e = new Rec { Name = "Ann Lee", DOB = "1984-02-11", Id = "K0731" };',
     [("Ann Lee", "name"), ("1984-02-11", "date_of_birth"), ("K0731", "identity")]),
    ("python", 'rows = [{"name": "Ann Lee", "id": "EMP-40721"}]\n',
     [("Ann Lee", "name"), ("EMP-40721", "identity")]),
    # an id of a thing, or without an identity number's shape: no value
    ("python", 'order = {"id": "K0731", "status": "shipped"}\n', []),
    ("python", 'rows = [{"name": "Ann Lee", "id": "7"}]\n', [("Ann Lee", "name")]),
]


@pytest.mark.parametrize("lang,code,expected", BARE_IDS)
def test_a_bare_id_in_a_persons_record_is_an_identity(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


NOT_VALUES_UNDER_KEYS = [
    # a stored hash under a password key is derived data
    ("java", 'String expectedPassword = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c2b4d6f80";', []),
    # a message that names its secret, compared with a generator's output
    ("python", 'assert generate_password("") == "No password provided"\n', []),
    # a short password under the same key stays
    ("java", 'String expectedPassword = "9f2c4e6a";', [("9f2c4e6a", "password")]),
    # a passphrase of words that do not name the secret stays
    ("python", 'password = "violet tiger rides north"\n', [("violet tiger rides north", "password")]),
    # a name or an address names its parts: kept
    ("python", 'address = "12 Oak Street Apt 4"\n', [("12 Oak Street Apt 4", "address")]),
]


@pytest.mark.parametrize("lang,code,expected", NOT_VALUES_UNDER_KEYS)
def test_hashes_and_messages_under_a_secrets_key_are_no_values(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


METHOD_EQUALITY = [
    ("csharp", 'Debug.Assert(securePassword.SequenceEqual("Vq8mZt2pKx"));', [("Vq8mZt2pKx", "password")]),
    ("java", 'assertTrue(userEmail.contentEquals("ann.lee@mail.invalid"));', [("ann.lee@mail.invalid", "email")]),
]


@pytest.mark.parametrize("lang,code,expected", METHOD_EQUALITY)
def test_method_equality_binds_the_compared_name(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected
