"""ExtractPII's key lexicon on whole identifier tokens with the attribute's role: the name
of a thing is not a person's name, a qualifier token can say whose card or notes a key
holds, one misspelt token still names its attribute. One table per miss kind."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testleak.extract import extract
from testleak.extract.keys import KeyIndex, person_name_shape
from testleak.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


def got(tax, code, lang="python"):
    return [(c["value"], c["attribute"]) for c in extract(code, tax, language=lang)]


# a lexicon word ending an identifier whose other tokens name a thing
IDENTIFIER_SUFFIX = [
    ("python", 'database_name = "Production Db"', []),
    ("python", 'sheet_name = "Sales Report"', []),
    ("javascript", 'const hostAddress = "Main Server";', []),
    ("python", 'commit_history = "Fix the build"', []),
    ("python", 'browser_history = "Home Page"', []),
    # the same words with a person's role stay the attribute
    ("python", 'student_name = "Ann Lee"', [("Ann Lee", "name")]),
    ("java", 'customer.setFullName("Olivia Brown");', [("Olivia Brown", "name")]),
    ("python", 'delivery_address = "12 Rue Cler, Paris"', [("12 Rue Cler, Paris", "address")]),
    ("python", 'family_history = "diabetes"', [("diabetes", "medical_record")]),
    # secrets of a service are secrets: no role needed
    ("python", 'smtp_password = "Tr0ub4dor&3"', [("Tr0ub4dor&3", "password")]),
]


@pytest.mark.parametrize("lang,code,expected", IDENTIFIER_SUFFIX)
def test_identifier_suffix_keys_need_the_attributes_role(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# names of things: dunder names, op/func/node names, a bare `name` holding no person's name
NAMES_OF_THINGS = [
    ("python", 'class Op:\n    __name__ = "Matrix Mul"\n', []),
    ("python", 'op_name = "Conv Two"\nfunc_name = "Do Thing"\n', []),
    ("javascript", 'el.nodeName = "Div Element";', []),
    ("python", 'w = tf.Variable(x, name="weights")', []),
    ("python", 'names = ["relu", "sigmoid", "tanh"]', []),
    ("python", 'layer = Dense(name="dense_1")', []),
    ("python", 'name = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW"', []),  # no fall-through to entropy either
    ("python", '__name__ = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW"', []),
    # a bare `name` with a person's name shape is a name
    ("python", 'u = User(name="Ann Lee")', [("Ann Lee", "name")]),
    ("python", 'names = ["Ann", "Jean-Luc Picard"]', [("Ann", "name"), ("Jean-Luc Picard", "name")]),
    ("javascript", '{ name: "María José van der Berg" }', [("María José van der Berg", "name")]),
]


@pytest.mark.parametrize("lang,code,expected", NAMES_OF_THINGS)
def test_names_of_things_are_not_names(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


@pytest.mark.parametrize("value,ok", [("Ann", True), ("O'Neil", True), ("J. Smith", True), ("张伟", True),
                                      ("weights", False), ("MyOp", False), ("dense_1", False), ("A", False),
                                      ("Ann Lee Mary Jo Ray Bo", False)])
def test_person_name_shape(value, ok):
    assert person_name_shape(value) is ok


# keys outside the lexicon that its tokens still name
LEXICON_GAPS = [
    ("python", 'identity = "X1234567"', [("X1234567", "identity")]),
    ("python", 'identity_card = "AB 123456"', [("AB 123456", "identity")]),
    ("javascript", '{ passportId: "C01X00T47" }', [("C01X00T47", "identity")]),
    ("python", 'medical_observations = "mild fever"', [("mild fever", "medical_record")]),
    ("python", 'clinical_notes = "no known allergies"', [("no known allergies", "medical_record")]),
    ("python", 'lab = "Room 12"', []),  # a domain word alone names nothing
    ("python", 'pasword = "kestrel4x9"', [("kestrel4x9", "password")]),
    ("java", 'String adress = "221B Baker Street";', [("221B Baker Street", "address")]),
    ("python", 'parts = "Wheel Axle"', []),  # one letter from `party`, a common word: not a typo
    ("python", 'passed = "yes it did"', []),
    ("python", 'render = "Astor Quell"', []),  # one letter from `sender`, but the first
    # parts of an address and people named by their role
    ("python", 'employee.country = "Portugal"', [("Portugal", "address")]),
    ("python", 'employee.state_province = "NY"', [("NY", "address")]),
    ("python", 'state = "ACTIVE"', []),  # a bare state is a program's state
    ("python", 'doctor = "Dr. Adeyemi"', [("Dr. Adeyemi", "name")]),
    ("json", '{"地点": "Lisbon"}', [("Lisbon", "address")]),
]


@pytest.mark.parametrize("lang,code,expected", LEXICON_GAPS)
def test_lexicon_gaps_closed_by_tokens(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


def test_resolve_says_how_a_key_matched(tax):
    ix = KeyIndex(tax)
    assert ix.resolve("full_name") == ("name", "exact")
    assert ix.resolve("studentName") == ("name", "head")
    assert ix.resolve("identity") == ("identity", "token")
    assert ix.resolve("emial") == ("email", "typo")
    assert ix.resolve("op_name") is None and ix.names_thing("op_name")
    assert ix.resolve("color") is None and not ix.names_thing("color")


# values a key names, kept without their attribute's shape: validity says why, the format
# rules reject them with that reason (extraction collects, the rules decide)
INVALID_BUT_KEYED = [
    ("python", 'fullName = "Ann Lee 2"', "Ann Lee 2", "name"),
    ("javascript", '{ cardNumber: "411111" }', "411111", "credit_card"),
    ("python", 'middle_name = "J"', "J", "name"),
    ("java", 'String expiryDate = "2027-05-31";', "2027-05-31", "credit_card"),
    ("python", 'swift = "Chase Bank"', "Chase Bank", "bank_statement"),
    ("python", 'password = "abc"', "abc", "password"),
    # the key outweighs another attribute's weak shape (a phone-like run of digits under iban)
    ("python", 'member = {"iban": "0210 7768 4530"}', "0210 7768 4530", "bank_statement"),
]


@pytest.mark.parametrize("lang,code,value,attr", INVALID_BUT_KEYED)
def test_keyed_values_without_shape_are_kept_with_validity(tax, lang, code, value, attr):
    from testleak.verify.rules import check

    cands = extract(code, tax, language=lang)
    assert [(c["value"], c["attribute"]) for c in cands] == [(value, attr)]
    v = cands[0]["validity"]
    assert v["ok"] is False and value not in v["reason"] and attr in v["reason"] or "one character" in v["reason"]
    r = check(attr, value, v)
    assert r["ok"] is False and r["reason"].startswith("extraction: ")
    assert check(attr, value)["reason"] != r["reason"]  # without the field the rule itself speaks


# a test's inputs that are no privacy values (placeholders, the key's own name, masked text,
# symbol runs) are still kept under a key that names an attribute, with the reason; without
# such a key, and for slots and format strings under any key, they are no candidate
KEYED_NON_VALUES = [
    ("python", 'access_token = "your_bearer_goes_here"', "your_bearer_goes_here", "auth_token", "a placeholder"),
    ("java", 'String storedSecret = "stored_secret";', "stored_secret", "secret_key",
     "the key's own name"),
    ("python", 'api_key = "AKIAxxxxxxxxxxxx"', "AKIAxxxxxxxxxxxx", "secret_key", "a masked value"),
    ("java", 'String userIdWithSpecialChar = "!#%&(@$^*)";', "!#%&(@$^*)", "username", "no letter or digit"),
]


@pytest.mark.parametrize("lang,code,value,attr,reason", KEYED_NON_VALUES,
                         ids=["placeholder", "echo", "masked", "symbols"])
def test_keyed_non_values_are_kept_for_the_rules(tax, lang, code, value, attr, reason):
    from testleak.verify.rules import check

    c, = extract(code, tax, language=lang)
    assert (c["value"], c["attribute"], c["validity"]) == (value, attr, {"ok": False, "reason": reason})
    verdict = check(attr, value, c["validity"])  # the rules' own placeholder list may speak first
    assert verdict["ok"] is False and verdict["reason"].startswith(("placeholder: ", "extraction: "))


@pytest.mark.parametrize("lang,code", [
    ("python", 'token = "your_own_value"\nlabel = "your_own_value"'),  # only the keyed one
    ("python", 'greeting = "dummy value"'),
    ("python", 'email = "<EMAIL>"'),
    ("python", 'password = "{password}"'),
    ("python", 'name = "your_name"'),  # a bare name: the value's shape decides, and it has none
])
def test_non_values_without_an_attribute_key_are_dropped(tax, lang, code):
    assert [c["value"] for c in extract(code, tax, language=lang) if c["evidence"]["key"] != "token"] == []


def test_a_symbol_run_is_no_format_string(tax):
    c, = extract('api_key = "A!@#$%^&*()_+{}|:;<=>?/~"', tax, language="python")
    assert c["attribute"] == "secret_key"
    assert extract('api_key = "user {}"', tax, language="python") == []


# a variable named after the field and then the case it tests
QUALIFIED_KEYS = [
    ("csharp", 'string userIdWithSpaces = " q771";', [("q771", "username")]),  # the blank is no part of it
    ("java", 'String emailWithoutAt = "bob.example.com";', [("bob.example.com", "email")]),
    ("python", 'password_for_admin = "kestrel4x9"', [("kestrel4x9", "password")]),
    ("python", 'name_with_suffix = "weights.bin"', []),  # a bare name stays ambiguous
]


@pytest.mark.parametrize("lang,code,expected", QUALIFIED_KEYS)
def test_keys_qualified_by_the_case_they_test(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


def test_values_with_their_shape_are_valid(tax):
    c, = extract('full_name = "Ann Lee"', tax, language="python")
    assert c["validity"] == {"ok": True}


# SQL inserts: values bind to their column names, in any string or multi-line literal,
# several rows, pieces joined by +, and parameters bound to placeholders
SQL_COLUMNS = [
    ("python", 'cur.execute("INSERT INTO users (full_name, email) VALUES (\'Ann Lee\', \'ann@corp.io\')")',
     [("Ann Lee", "name", "full_name"), ("ann@corp.io", "email", "email")]),
    ("python", 'db.execute("""\n    INSERT INTO people (surname, ssn)\n    VALUES (\'Lee\', \'123-45-6789\'),\n'
               '           (\'Ray\', \'987-65-4321\')\n""")',
     [("Lee", "name", "surname"), ("123-45-6789", "identity", "ssn"), ("Ray", "name", "surname"),
      ("987-65-4321", "identity", "ssn")]),
    ("java", 'stmt.execute("INSERT INTO users (username, password) " +\n    "VALUES (\'jdoe77\', \'Tr0ub4dor&3\')");',
     [("jdoe77", "username", "username"), ("Tr0ub4dor&3", "password", "password")]),
    ("python", 'q = ("INSERT INTO t (phone) " + "VALUES (\'+44 20 7946 0958\')")',
     [("+44 20 7946 0958", "phone", "phone")]),
    ("python", 'cur.execute("INSERT INTO users (username, password) VALUES (?, ?)", ("jdoe77", "Tr0ub4dor&3"))',
     [("jdoe77", "username", "username"), ("Tr0ub4dor&3", "password", "password")]),
    ("python", 'sql = "INSERT INTO users (username, created, password) VALUES (%s, NOW(), %s)"\n'
               'cur.executemany(sql, [("jdoe77", "Tr0ub4dor&3"), ("amy_k", "s3cr3tPass")])',
     [("jdoe77", "username", "username"), ("Tr0ub4dor&3", "password", "password"),
      ("amy_k", "username", "username"), ("s3cr3tPass", "password", "password")]),
    # an insert written as code, not in a string: a .sql answer, a bare statement, two statements
    ("sql", "INSERT INTO users (name, city, dob) VALUES ('Ann Lee', 'Leeds', '1985-05-23');",
     [("Ann Lee", "name", "name"), ("Leeds", "address", "city"), ("1985-05-23", "date_of_birth", "dob")]),
    (None, "INSERT INTO contacts (telephone, note) VALUES ('+44 20 7946 0958', 'a;b');\n"
           "INSERT INTO users (username) VALUES ('jdoe77'), ('amy_k')",
     [("+44 20 7946 0958", "phone", "telephone"), ("jdoe77", "username", "username"),
      ("amy_k", "username", "username")]),
]


@pytest.mark.parametrize("lang,code,expected", SQL_COLUMNS, ids=["one-row", "rows", "java-plus", "py-plus",
                                                                 "params", "executemany", "sql-code", "bare-statements"])
def test_sql_insert_values_bind_to_columns(tax, lang, code, expected):
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in extract(code, tax, language=lang)] == expected


# doctest sessions are code: in a docstring, with ... continuations, in a .. doctest block,
# in prose between fences
DOCTESTS = [
    ("python", 'def check(u):\n    """Validate.\n\n    >>> check(User(email="ann@corp.io", full_name="Ann Lee"))\n'
               '    True\n    """\n    return True\n',
     [("ann@corp.io", "email", "email"), ("Ann Lee", "name", "full_name")]),
    ("python", 'class A:\n    def f(self):\n        """\n        >>> register("x1",\n        ...          password="Tr0ub4dor&3",\n'
               '        ...          phone="+44 20 7946 0958")\n        """\n',
     [("Tr0ub4dor&3", "password", "password"), ("+44 20 7946 0958", "phone", "phone")]),
    (None, 'Usage:\n\n.. doctest::\n\n    >>> u = User(surname="Okafor")\n    >>> u.ssn = "123-45-6789"\n',
     [("Okafor", "name", "surname"), ("123-45-6789", "identity", "ssn")]),
    (None, 'Example:\n\n>>> login(username="jdoe77")\n\n```python\ndef test_x():\n    assert True\n```\n',
     [("jdoe77", "username", "username")]),
    ("python", '>>> def make():\n...     return {"iban": "DE89 3704 0044 0532 0130 00"}\n',
     [("DE89 3704 0044 0532 0130 00", "bank_statement", "iban")]),
]


@pytest.mark.parametrize("lang,code,expected", DOCTESTS, ids=["docstring", "continuation", "rst", "prose", "def"])
def test_doctest_sessions_are_code(tax, lang, code, expected):
    cands = extract(code, tax, language=lang)
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in cands] == expected
    for c in cands:  # spans point at the value in the answer
        s, e = c["evidence"]["span"]
        assert code[s:e] == c["value"] or c["value"] in code[s:e]


# the answer hit its token limit inside the last literal: the value is kept, marked cut
CUT_OFF = [
    ("python", 'def test_x():\n    user = User(full_name="Ann Lee", password="Tr0ub4d', "Tr0ub4d", "password", "password"),
    ("javascript", "it('a', () => {\n  const u = { email: 'ann@corp.io', phone: '+44 20 7946", "+44 20 7946", "phone",
     "phone"),
    ("java", '```java\n@Test\nvoid t() {\n    user.setUsername("jdoe7', "jdoe7", "username", "setUsername"),
]


@pytest.mark.parametrize("lang,code,value,attr,key", CUT_OFF, ids=["python", "javascript", "fence"])
def test_cut_off_final_literal_keeps_its_value(tax, lang, code, value, attr, key):
    cands = extract(code, tax, language=lang)
    last = cands[-1]
    assert (last["value"], last["attribute"], last["evidence"]["key"]) == (value, attr, key)
    assert last["validity"].get("cut") is True
    assert all("cut" not in c["validity"] for c in cands[:-1])


@pytest.mark.parametrize("code", [
    '```python\nname = "Ann Lee"\nx = "open\n```\nmore text',  # a closed fence: not cut off
    'password = "Tr0ub4dor&3"\n# it\'s done\n',  # an apostrophe in a last comment line
    'password = "Tr0ub4dor&3"\nprint("done")',
])
def test_no_cut_literal_without_a_cut(tax, code):
    assert all("cut" not in c["validity"] for c in extract(code, tax, language="python"))


@pytest.mark.parametrize("code,expected", [
    ('expected_names = ["a", "b", "idx"]', []),
    ('self.set_name("weights")', []),
    ('expected_names = ["Ann Lee"]', [("Ann Lee", "name")]),
    ('student_names = ["x"]', [("x", "name")]),  # a person's role: kept, off-shape
])
def test_modifiers_leave_a_bare_head_ambiguous(tax, code, expected):
    assert got(tax, code) == expected


# a string that holds code: its keyword arguments are the values, each under its own name
CODE_IN_STRINGS = [
    ("csharp", 'Debug.Assert(S.Gen("client.login(username=\'ann_lee77\', password=\'Falke!Nord72\')", "x") == "y");',
     [("ann_lee77", "username", "username"), ("Falke!Nord72", "password", "password")]),
    ("python", 'q = "user = User(email=\\"ann@corp.io\\", full_name=\'Ann Lee\')"',
     [("ann@corp.io", "email", "email"), ("Ann Lee", "name", "full_name")]),
    ("python", 'msg = "Hello, world"', []),
]


@pytest.mark.parametrize("lang,code,expected", CODE_IN_STRINGS, ids=["call-in-string", "assignment-in-string", "prose-string"])
def test_code_inside_a_string_binds_its_arguments(tax, lang, code, expected):
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in extract(code, tax, language=lang)] == expected


# tests written as prose: field lines between fences and in plain-text output blocks
PROSE_FIELDS = [
    ("#### Parameters:\n- `username`: \"ann_lee77\"\n- **Email:** ann.lee@corp.io\n\n```python\nassert f()\n```\n",
     [("ann_lee77", "username"), ("ann.lee@corp.io", "email")]),
    ("**Expected Output**:\n```\nGenerated Password: Tr0ub4dor&7\n```\n", [("Tr0ub4dor&7", "password")]),
    ("Note: the test covers it.\n```python\nassert f()\n```\nStatus: done\n", []),
    ("- `password`: \"cut off\n```python\nassert f()\n```\n", []),
    # an untagged output block in an answer whose code is Java (its language only a default)
    ("```java\nclass T {}\n```\n**Expected Output**:\n```\nGenerated Password: k9m2p7q4w1\n```\n",
     [("k9m2p7q4w1", "password")]),
    # descriptions of the tests, not values: a test's name as the field, a sentence as the value
    ("```java\nclass T {}\n```\n3. **Test Cases**:\n   - `TestIsAuthorized_AuthorizedUser`: Tests an authorized user.\n"
     "   - User: the user that logs in.\n   - Full name: Ann Lee\n", [("Ann Lee", "name")]),
    # code in an untagged block: the declaration's value, not the text after the colon
    ("```\npassword: str = \"Kr4nich!\"\n```\n", [("Kr4nich!", "password")]),
    # free text keeps its sentences
    ("```java\nclass T {}\n```\n- Diagnosis: Patient has a history of asthma.\n",
     [("Patient has a history of asthma.", "medical_record")]),
]


@pytest.mark.parametrize("text,expected", PROSE_FIELDS, ids=["parameter-list", "output-block", "no-field", "open-quote",
                                                            "untagged-block", "descriptions", "typed-code",
                                                            "free-text"])
def test_field_lines_of_prose_and_plain_output(tax, text, expected):
    cands = extract(text, tax, language="java")
    assert [(c["value"], c["attribute"]) for c in cands] == expected
    for c in cands:  # the span points at the value in the text
        s, e = c["evidence"]["span"]
        assert text[s:e] == c["value"]


# what a call's name says about its sole argument and about the value it returns
CALLS = [
    ("java", 'byte[] h = GenerateSecurePasswordHash("swordfish9");', [("swordfish9", "password")]),
    ("python", 'user = find_user_by_email("ann@corp.io")', [("ann@corp.io", "email")]),
    ("python", 'token = generate_token("member7")', []),  # the argument is what the token is made from
    ("python", 'validate_phone("+44 20 7946 0958")', [("+44 20 7946 0958", "phone")]),
    ("python", 'cfg = get_config("db.main")', []),
    # compared with a call's result: the callee names the value, unless it transforms its input
    ("python", 'assert generate_secure_password(length=15) == "Tr4b3dor&*()_+{}|:"', [("Tr4b3dor&*()_+{}|:", "password")]),
    ("python", 'assert hash_password("pw12345") == "5f4dcc3b5aa765d61d8327deb882cf99"', [("pw12345", "password")]),
]


@pytest.mark.parametrize("lang,code,expected", CALLS, ids=["derived-noun", "by-field", "producer", "validator",
                                                           "getter", "compared-result", "compared-transform"])
def test_what_a_call_says_about_its_values(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


KEYS_AND_SHAPES = [
    # a title names a person under a bare `name`, whatever follows it
    ("json", '{"name": "Ann Lee", "city": "Oslo", "name": "Mx. 41"}',
     [("Ann Lee", "name"), ("Oslo", "address"), ("Mx. 41", "name")]),
    ("python", 'name = "Mr. Robot"', [("Mr. Robot", "name")]),
    ("python", 'name = "weights.bin"', []),
    # a Luhn check passes 1 number in 10: it does not overrule an account key
    ("python", 'account_number = "603719482052"', [("603719482052", "bank_statement")]),
    ("python", 'phone = "4242 4242 4242 4242"', [("4242 4242 4242 4242", "credit_card")]),
    # a number in arithmetic is an operand, not the key's value
    ("python", 'balance = 5000 * 12', []),
    ("json", '{"护照号码": "E12345678"}', [("E12345678", "identity")]),
]


@pytest.mark.parametrize("lang,code,expected", KEYS_AND_SHAPES, ids=["titled-name", "titled-bare", "thing-name",
                                                                     "luhn-vs-account", "card-under-phone",
                                                                     "arithmetic", "passport-zh"])
def test_keys_and_shapes(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


def test_inline_code_assignments_in_prose(tax):
    text = ('```java\nclass T {}\n```\n3. **Encrypt**\n   - **Parameters**: `biometricData: "fp_7731"` | '
            '`const accessToken = "tok_88a1b2"` | `retries = "3"`\n')
    cands = extract(text, tax, language="java")
    assert [(c["value"], c["attribute"]) for c in cands] == [("fp_7731", "biometric"), ("tok_88a1b2", "auth_token")]
    for c in cands:
        s, e = c["evidence"]["span"]
        assert text[s:e] == c["value"]
