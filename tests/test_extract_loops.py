"""ExtractPII round 10: values a loop binds (testleak/extract/loops.py), an Authorization
header's credential, a record number under a user-id key, and which argument a function's
name describes; one table per kind, each with the cases the rule must leave alone."""

from __future__ import annotations

import pytest

from testleak.extract import extract


def got(taxonomy, code, lang, context=()):
    return [(c["value"], c["attribute"]) for c in extract(code, taxonomy, language=lang, context=context)]


PY_UNDER_TEST = "def derive_key(password, salt):\n    return password\n\ndef is_valid_password(pw):\n" \
                "    return len(pw) > 3\n\ndef login(user, secret):\n    return True\n"
JS_UNDER_TEST = "function validateUsername(name) { return true; }\nfunction hashPassword(pw, rounds) { return pw; }\n"
CS_UNDER_TEST = "public static bool IsValidUsername(string login) { return true; }\n"
JAVA_UNDER_TEST = "public static boolean isValidPhone(String phone) { return true; }\n"

LOOPS = [
    # a mapping's keys and values through .items(): the keys go to derive_key's password
    ("python", 'cases = {"Blue7Harbor": "k-1a2b", "Quiet#River9": "k-9f8e"}\n'
               'for pw, expected in cases.items():\n    assert derive_key(pw, "s") == expected\n',
     PY_UNDER_TEST, [("Blue7Harbor", "password"), ("Quiet#River9", "password")]),
    # an inline list, one variable
    ("python", 'for p in ["Sunny$Day42", "Mango!Tree77"]:\n    assert is_valid_password(p)\n',
     PY_UNDER_TEST, [("Sunny$Day42", "password"), ("Mango!Tree77", "password")]),
    # rows unpacked into two variables, each passed at its own position
    ("python", 'rows = [("kim_harlow", "Velvet%Moon3"), ("rosa_ng", "Tiger&Lake8")]\n'
               'for u, s in rows:\n    assert login(u, s)\n',
     PY_UNDER_TEST, [("kim_harlow", "username"), ("Velvet%Moon3", "secret_key"),
                     ("rosa_ng", "username"), ("Tiger&Lake8", "secret_key")]),
    # the variable's own name names the attribute: no code under test needed
    ("python", 'for password in ("Cobalt!Fern5", "Amber?Wolf2"):\n    check(password)\n', "",
     [("Cobalt!Fern5", "password"), ("Amber?Wolf2", "password")]),
    # JavaScript for-of and forEach with destructuring; the ambiguous parameter `name` of
    # validateUsername defers to the function's name
    ("javascript", 'for (const c of ["lena_ortiz", "mkowal88"]) {\n  expect(validateUsername(c)).toBe(true);\n}\n'
                   'const rows = [["Birch!Lane4", 10]];\nrows.forEach(([v, n]) => { expect(hashPassword(v, n)).toBeTruthy(); });\n',
     JS_UNDER_TEST, [("lena_ortiz", "username"), ("mkowal88", "username"), ("Birch!Lane4", "password")]),
    # C# foreach over a new[] { .. } held in a variable
    ("csharp", 'var inputs = new[] { "nora.vance", "t_okafor" };\nforeach (var input in inputs) {\n'
               '    Assert.True(IsValidUsername(input));\n}\n',
     CS_UNDER_TEST, [("nora.vance", "username"), ("t_okafor", "username")]),
    # Java's enhanced for over List.of(..)
    ("java", 'for (String s : List.of("020 7946 0321", "415 555 0134")) {\n    assertTrue(isValidPhone(s));\n}\n',
     JAVA_UNDER_TEST, [("020 7946 0321", "phone"), ("415 555 0134", "phone")]),
    # left alone: the variable goes to a function the code under test does not define
    ("python", 'for p in ["Sunny$Day42"]:\n    print(len(p))\n', PY_UNDER_TEST, []),
    # one variable bound to whole rows: each part the body reads (row[0], c.Key, c.Item2) by its use
    ("python", 'for row in [("kim_harlow", "Velvet%Moon3")]:\n    assert login(row[0], row[1])\n',
     PY_UNDER_TEST, [("kim_harlow", "username"), ("Velvet%Moon3", "secret_key")]),
    # ...left alone when the body reads no part of it
    ("python", 'for row in [("kim_harlow", "Velvet%Moon3")]:\n    assert login(*row)\n', PY_UNDER_TEST, []),
    # left alone: a value whose own key names another attribute keeps it
    ("python", 'cases = [{"email": "ann.lee@mail.invalid"}]\nfor c in cases:\n    assert is_valid_password(c)\n',
     PY_UNDER_TEST, [("ann.lee@mail.invalid", "email")]),
]


@pytest.mark.parametrize("lang,code,under_test,expected", LOOPS)
def test_a_loop_binds_its_rows_to_its_variables(taxonomy, lang, code, under_test, expected):
    assert got(taxonomy, code, lang, context=[under_test] if under_test else ()) == expected


AUTH_HEADERS = [  # the credential alone (testleak/extract/embedded.py)
    ("python", 'mock_request.headers.get.return_value = "Bearer Mn7Bv6Cx5Z"\n', [("Mn7Bv6Cx5Z", "auth_token")]),
    ("python", 'resp = client.get("/x", headers=[("Authorization", "Basic dXNlcjpwYXNz")])\n',
     [("dXNlcjpwYXNz", "auth_token")]),
    ("javascript", "const hdr = 'Token 9fQe7ZtLx2';\n", [("9fQe7ZtLx2", "auth_token")]),
    # left alone: a slot, a sentence, a scheme without a credential
    ("python", 'h = "Bearer <TOKEN>"\n', []),
    ("python", 'msg = "Bearer tokens expire hourly"\n', []),
    ("python", 'scheme = "Bearer"\n', []),
]


@pytest.mark.parametrize("lang,code,expected", AUTH_HEADERS)
def test_an_authorization_headers_credential_is_a_token_by_its_shape(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


RECORD_IDS = [
    ("python", 'r = {"UserId": "77120"}\n', []),
    ("python", 'r = {"user_id": "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"}\n', []),
    # a user id that is a name one logs in with stays a username; so does a number under `user`
    ("python", 'r = {"user_id": "dana_w"}\n', [("dana_w", "username")]),
    ("python", 'r = {"user": "77120"}\n', [("77120", "username")]),
]


@pytest.mark.parametrize("lang,code,expected", RECORD_IDS)
def test_a_number_under_a_user_id_key_is_a_records_number(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


def test_a_functions_name_describes_its_first_argument_only(taxonomy):
    under = "def login(user, token_ttl):\n    return True\n"
    code = 'u = "kim_harlow"\nt = "3600s-window"\nassert login(u, t)\n'
    assert got(taxonomy, code, "python", context=[under]) == [("kim_harlow", "username")]
