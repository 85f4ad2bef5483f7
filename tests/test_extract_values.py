"""ExtractPII on the value classes of issue #17: checksum precedence, keyed values kept for
the rules and the judge, international formats, non-values, multi-value literals,
multilingual keys and keyless values. Each row is checked exactly; where extraction now
keeps a value for the rules to judge, the rule's verdict on it is checked too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testleak.extract import extract
from testleak.taxonomy import Taxonomy
from testleak.verify.rules import check

ROOT = Path(__file__).resolve().parent.parent
IBAN = "DE89 3704 0044 0532 0130 00"  # the IBAN registry's German example, checksum-valid
RIC = "11010519491231002X"  # checksum-valid Chinese resident ID


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


def got(tax, code, lang):
    """Candidates with their attribute's shape (values kept off-shape: tests/test_extract_roles.py)."""
    return [(c["value"], c["attribute"], c["evidence"]["pattern"]) for c in extract(code, tax, language=lang)
            if c["validity"]["ok"]]


# checksum-validated format > key lexicon > shape
PRECEDENCE = [
    ("python", f'account = "{IBAN}"', [(IBAN, "bank_statement", "iban")]),
    ("java", f'user.setUsername("{IBAN}");', [(IBAN, "bank_statement", "iban")]),
    ("python", 'phone = "4242 4242 4242 4242"', [("4242 4242 4242 4242", "credit_card", "luhn")]),
    ("javascript", f'{{ userId: "{RIC}" }}', [(RIC, "identity", "ric")]),
    ("python", f'iban = "{IBAN}"', [(IBAN, "bank_statement", "lexicon")]),  # key and checksum agree
    # a keyed value that fails its key's check does not become a secret by entropy
    ("python", 'name = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW"', []),
]


@pytest.mark.parametrize("lang,code,expected", PRECEDENCE)
def test_checksum_beats_key(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


# keyed values that fail validity are collected; the format rules reject them
KEYED_INVALID = [
    ("java", 'String email = "john@localhost";', "john@localhost", "email", "placeholder: reserved"),
    ("javascript", '{ dob: "2999-01-01" }', "2999-01-01", "date_of_birth", "date outside 1900..today"),
    ("python", 'iban = "DE00 1234 5678 9012 3456 78"', "DE00 1234 5678 9012 3456 78", "bank_statement",
     "IBAN-shaped but checksum fails"),
    ("python", 'card_number = "4111 1111 1111 1112"', "4111 1111 1111 1112", "credit_card", "fails the Luhn check"),
    ("python", 'ssn = "000-12-3456"', "000-12-3456", "identity", "SSN-shaped but invalid"),
    ("json", '{"phone": "+1 000 000 0001"}', "+1 000 000 0001", "phone", "not a valid phone number"),
]


@pytest.mark.parametrize("lang,code,value,attr,reason", KEYED_INVALID)
def test_keyed_values_are_kept_for_the_rules(tax, lang, code, value, attr, reason):
    assert got(tax, code, lang) == [(value, attr, "lexicon")]
    r = check(attr, value)
    assert r["ok"] is False and r["reason"].startswith(reason), r


NON_VALUES = [
    ("python", 'password = "pass<PASSWORD>word"'),
    ("javascript", 'headers = { Authorization: "Bearer <TOKEN>" }'),
    ("python", 'change_password(old_password="new_password")'),   # a field name, not data
    ("java", 'user.setUserName("user_name");'),
]


def test_single_lexicon_words_stay_values(tax):
    assert got(tax, 'password = "admin"', "python") == [("admin", "password", "lexicon")]


@pytest.mark.parametrize("lang,code", NON_VALUES)
def test_non_values(tax, lang, code):
    assert got(tax, code, lang) == []


INTERNATIONAL = [
    ("python", 'send(to="用户@例子.中国")', [("用户@例子.中国", "email", "email")]),
    ("python", 'send(to="josé.garcía@correo.es")', [("josé.garcía@correo.es", "email", "email")]),
    ("python", 'send(to="user@xn--fiqs8s.xn--fiqz9s")', [("user@xn--fiqs8s.xn--fiqz9s", "email", "email")]),
    ("python", "send(to=\"first.o'neil+tag@corp.io\")", [("first.o'neil+tag@corp.io", "email", "email")]),
    ("python", 'dial("0044 20 7946 0958")', [("0044 20 7946 0958", "phone", "phone")]),
    ("python", 'dial("011 49 30 12345678")', [("011 49 30 12345678", "phone", "phone")]),
    ("python", 'dial("++44 20 7946 0958")', [("++44 20 7946 0958", "phone", "phone")]),
    ("python", 'dial("050-1234-5678")', [("050-1234-5678", "phone", "phone")]),
]


@pytest.mark.parametrize("lang,code,expected", INTERNATIONAL)
def test_international_formats(tax, lang, code, expected):
    assert got(tax, code, lang) == expected


def test_plural_and_collection_keys(tax):
    assert got(tax, 'passwords = ["Tr0ub4dor&3", "hunter2!!"]', "python") == [
        ("Tr0ub4dor&3", "password", "lexicon"), ("hunter2!!", "password", "lexicon")]


# key lexicons in Chinese, German, French and Spanish (testleak/resources/taxonomy_paper.yaml lexicon_i18n)
MULTILINGUAL = [
    ("json", '{"登录密码": "Tr0ub4dor&3", "家庭住址": "北京市朝阳区建国路88号", "用户名": "zhangsan88"}',
     [("Tr0ub4dor&3", "password"), ("北京市朝阳区建国路88号", "address"), ("zhangsan88", "username")]),
    ("java", 'kunde.setPasswort("Geheim123!");\nkunde.setGeburtsdatum("1984-02-29");',
     [("Geheim123!", "password"), ("1984-02-29", "date_of_birth")]),
    ("python", 'client = Client(adresse="12 rue de la Paix", mot_de_passe="Secret99!")',
     [("12 rue de la Paix", "address"), ("Secret99!", "password")]),
    ("javascript", "const usuario = { contraseña: 'Secreto99!', correoElectronico: 'x' };",
     [("Secreto99!", "password")]),
    ("javascript", "const u = { 手机号码: '13800138000', benutzerPasswort: 'Geheim123!' };",
     [("13800138000", "phone"), ("Geheim123!", "password")]),
]


@pytest.mark.parametrize("lang,code,expected", MULTILINGUAL)
def test_multilingual_keys(tax, lang, code, expected):
    assert [(v, a) for v, a, _ in got(tax, code, lang)] == expected


@pytest.mark.parametrize("name,attr", [("登录密码", "password"), ("Benutzerpasswort", "password"),
                                       ("contraseña", "password"), ("Geburtsdatum", "date_of_birth"),
                                       ("filename", None), ("hostname", None), ("nomUtilisateur", "username")])
def test_compound_and_accented_key_names(tax, name, attr):
    assert tax.attribute_for_name(name) == attr


# values without a key of their own: elements of a collection bound to an attribute name
KEYLESS = [
    ("java", 'List<String> names = Arrays.asList("Maria Gonzalez", "Li Wei");',
     [("Maria Gonzalez", "name"), ("Li Wei", "name")]),
    ("java", 'Set<String> passwords = new HashSet<>();\npasswords.add("Tr0ub4dor&3");', [("Tr0ub4dor&3", "password")]),
    ("java", 'List<String> emails = List.of("a.b@corp.io", "c.d@corp.io");',
     [("a.b@corp.io", "email"), ("c.d@corp.io", "email")]),
    ("csharp", 'string[] passwords = { "Tr0ub4dor&3", "S3cret!pw" };',
     [("Tr0ub4dor&3", "password"), ("S3cret!pw", "password")]),
    ("csharp", 'var users = new List<string> { "alice01", "bob_99" };', [("alice01", "username"), ("bob_99", "username")]),
    ("go", 'passwords := []string{"Tr0ub4dor&3", "S3cret!pw"}', [("Tr0ub4dor&3", "password"), ("S3cret!pw", "password")]),
    ("javascript", "usernames.push('alice01');", [("alice01", "username")]),
    # a collection whose name is no attribute gives its elements no key
    ("java", 'List<String> labels = List.of("Astor Quell");', []),
]


@pytest.mark.parametrize("lang,code,expected", KEYLESS)
def test_collection_elements_take_the_collection_name(tax, lang, code, expected):
    assert [(v, a) for v, a, _ in got(tax, code, lang)] == expected


# not key-value pairs
@pytest.mark.parametrize("lang,code", [
    ("java", 'assert isValid(user) : "Expected user to be valid";'),
    ("java", 'assert password != null : "Tr0ub4dor&3 must not be null";'),
    ("javascript", "const name = flag ? other : 'Astor Quell';"),
])
def test_assert_message_and_ternary_are_not_values_of_a_key(tax, lang, code):
    assert got(tax, code, lang) == []


# many values in one string constant
MULTI = [
    ("python", 'FIXTURE = """\nDE89 3704 0044 0532 0130 00\nGB82 WEST 1234 5698 7654 32\n'
               'FR14 2004 1010 0505 0001 3M02 606\n"""',
     [("DE89 3704 0044 0532 0130 00", "bank_statement", None), ("GB82 WEST 1234 5698 7654 32", "bank_statement", None),
      ("FR14 2004 1010 0505 0001 3M02 606", "bank_statement", None)]),
    ("python", "SQL = \"INSERT INTO users (name, email, phone, password) VALUES ('Maria Gonzalez', 'maria@corp.io', "
               "'+44 20 7946 0958', 'Tr0ub4dor&3'), ('Li Wei', 'li.wei@qq.com', '+86 138 0013 8000', 'O''Brien!99')\"",
     [("Maria Gonzalez", "name", "name"), ("maria@corp.io", "email", "email"), ("+44 20 7946 0958", "phone", "phone"),
      ("Tr0ub4dor&3", "password", "password"), ("Li Wei", "name", "name"), ("li.wei@qq.com", "email", "email"),
      ("+86 138 0013 8000", "phone", "phone"), ("O'Brien!99", "password", "password")]),
    ("javascript", "const body = '{\"user\": {\"name\": \"Maria Gonzalez\", \"phones\": [\"+44 20 7946 0958\"], "
                   "\"登录密码\": \"Tr0ub4dor&3\"}}';",
     [("Maria Gonzalez", "name", "name"), ("+44 20 7946 0958", "phone", "phones"), ("Tr0ub4dor&3", "password", "登录密码")]),
    ("python", 'CSV = """name,email,card\nMaria Gonzalez,maria@corp.io,4242 4242 4242 4242\n'
               'Li Wei,li.wei@qq.com,5555 5555 5555 4444\n"""',
     [("Maria Gonzalez", "name", "name"), ("maria@corp.io", "email", "email"),
      ("4242 4242 4242 4242", "credit_card", "card"), ("Li Wei", "name", "name"), ("li.wei@qq.com", "email", "email"),
      ("5555 5555 5555 4444", "credit_card", "card")]),
    ("python", "TSV = 'name\\tphone\\nMaria Gonzalez\\t+44 20 7946 0958\\n'",
     [("Maria Gonzalez", "name", "name"), ("+44 20 7946 0958", "phone", "phone")]),
    ("python", 'emails = """\nann@corp.io\nbob@corp.io\n"""', [("ann@corp.io", "email", "emails"), ("bob@corp.io", "email", "emails")]),
    ("python", 'CONFIG = """\npassword: Tr0ub4dor&3\nusername = alice01\n"""',
     [("Tr0ub4dor&3", "password", "password"), ("alice01", "username", "username")]),
]


@pytest.mark.parametrize("lang,code,expected", MULTI, ids=["ibans", "sql", "json", "csv", "tsv", "lines", "key-lines"])
def test_multi_value_literals(tax, lang, code, expected):
    cands = extract(code, tax, language=lang)
    keys = [None if k == "FIXTURE" else k for k in (c["evidence"]["key"] for c in cands)]
    assert [(c["value"], c["attribute"], k) for c, k in zip(cands, keys)] == expected
    for c in cands:  # verbatim literals: each span points at its value; escaped ones at the literal
        s, e, v = *c["evidence"]["span"], c["value"]
        assert code[s:e] == v or (e - s > len(v) and v.split("'")[0].split()[0] in code[s:e])
    if lang == "python" and "'" not in code and "\\" not in code:
        assert all(code[slice(*c["evidence"]["span"])] == c["value"] for c in cands)


def test_pem_block_stays_one_value(tax):
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq9\n-----END RSA PRIVATE KEY-----"
    assert got(tax, f'key = """{pem}"""', "python") == [(pem, "secret_key", "pem")]


def test_go_table_rows_map_positions_to_struct_fields(tax):
    code = ('func TestRegister(t *testing.T) {\n\ttests := []struct {\n\t\tname  string\n\t\temail, phone string\n'
            '\t\tcard  string `json:"card"`\n\t}{\n'
            '\t\t{"first", "a.b@corp.io", "13238298001", "4242424242424242"},\n'
            '\t\t{"third", "x@corp.io", "01184960432", "5555555555554444"},\n\t}\n}\n')
    assert [(v, a) for v, a, _ in got(tax, code, "go")] == [
        ("a.b@corp.io", "email"), ("13238298001", "phone"), ("4242424242424242", "credit_card"),
        ("x@corp.io", "email"), ("01184960432", "phone"), ("5555555555554444", "credit_card")]


@pytest.mark.parametrize("code,expected", [
    ('dial("+1-204-527-0883x94956")', [("+1-204-527-0883x94956", "phone", "phone")]),  # extension digits not counted
    ('charge("213100000000001")', [("213100000000001", "credit_card", "luhn")]),  # JCB's 15-digit range
    ('send("' + "john56789." * 6 + 'john5@corp.io")', [("john56789." * 6 + "john5@corp.io", "email", "email")]),
])
def test_format_edges_from_third_party_values(tax, code, expected):
    assert got(tax, code, "python") == expected


def test_positional_arguments_named_by_the_code_under_test(tax):
    code_turn = "```python\nclass Person:\n    def __init__(self, full_name, email, password):\n        ...\n```"
    test = "```python\ndef test_person():\n    p = Person('Maria Gonzalez', 'x', 'Tr0ub4dor&3')\n    assert p\n```"
    # the answer alone does not say what the arguments are: only a full name shows by its shape
    assert got(tax, test, None) == [("Maria Gonzalez", "name", "given_name")]
    cands = [c for c in extract(test, tax, context=[code_turn]) if c["validity"]["ok"]]
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in cands] == [
        ("Maria Gonzalez", "name", "full_name"), ("Tr0ub4dor&3", "password", "password")]


def test_candidates_stage_reads_signatures_from_the_code_turn(tax):
    from testleak.extract import candidates_from_responses
    rec = {"id": "q1/s0", "status": "ok",
           "turn1": {"text": "```python\ndef register(username, password):\n    ...\n```"},
           "turn2": {"text": "```python\ndef test_register():\n    assert register('alice01', 'Tr0ub4dor&3')\n```"}}
    cands, stats = candidates_from_responses([rec], tax)
    assert [(c["value"], c["attribute"]) for c in cands] == [("alice01", "username"), ("Tr0ub4dor&3", "password")]
    assert stats["candidates"] == 2


C_LIKE_SIGNATURES = [
    ("java", "public class Customer {\n  public Customer(String email, final String phone, String cardNumber) { }\n}",
     "@Test\nvoid pays() {\n  Customer c = new Customer(\"x\", \"13238298001\", \"4242424242424242\");\n}",
     [("13238298001", "phone", "phone"), ("4242424242424242", "credit_card", "cardNumber")]),
    ("javascript", "class Account {\n  constructor(username, password) { this.u = username; }\n}",
     "it('logs in', () => {\n  const a = new Account('alice01', 'Tr0ub4dor&3');\n});",
     [("alice01", "username", "username"), ("Tr0ub4dor&3", "password", "password")]),
    ("go", "func Register(email string, phone string) error {\n\treturn nil\n}",
     "func TestRegister(t *testing.T) {\n\tRegister(\"x\", \"0803432167\")\n}",
     [("0803432167", "phone", "phone")]),
]


@pytest.mark.parametrize("lang,code_turn,test,expected", C_LIKE_SIGNATURES, ids=["java", "javascript", "go"])
def test_positional_arguments_in_c_like_languages(tax, lang, code_turn, test, expected):
    fence = f"```{lang}\n{{}}\n```"
    alone = got(tax, fence.format(test), None)
    assert all(p != "lexicon" and a != "phone" for _, a, p in alone)  # without the definition: shapes only
    cands = [c for c in extract(fence.format(test), tax, context=[fence.format(code_turn)]) if c["validity"]["ok"]]
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in cands] == expected
    # a definition in the answer itself serves as well
    both = [c for c in extract(fence.format(code_turn) + "\n" + fence.format(test), tax) if c["validity"]["ok"]]
    assert [(c["value"], c["attribute"]) for c in both] == [(v, a) for v, a, _ in expected]


# classes found on the embedded model's own answers (benchmarks/eval_model_output.py);
# synthetic values only. Each row: language, code, [(value, attribute, key)].
MODEL_OUTPUT_CLASSES = {
    "numbered keys": [
        ("csharp", 'string oldPassword1 = "Kranich!7";\nstring username2 = "k.morgen";',
         [("Kranich!7", "password", "oldPassword1"), ("k.morgen", "username", "username2")]),
        ("python", 'email_3 = "ann.lee@corp.io"\npin2 = "4711"',
         [("ann.lee@corp.io", "email", "email_3"), ("4711", "auth_token", "pin2")]),
        # a numbered *value* is not a field name: the argument after it gets no key from it
        ("java", 'service.submit("user77", "Kranich!7");', []),
        ("python", 'submit("user77", "Kranich!7")', []),
    ],
    "assertions": [
        ("python", 'self.assertEqual(password, "Kranich")\nself.assertNotEqual(user.phone, "0803432167")',
         [("Kranich", "password", "password"), ("0803432167", "phone", "phone")]),
        ("java", 'assertEquals(List.of("Deposit 50.00 EUR", "Fee 2.00 EUR"), transactions);',
         [("Deposit 50.00 EUR", "bank_statement", "transactions"), ("Fee 2.00 EUR", "bank_statement", "transactions")]),
        ("csharp", 'Assert.AreEqual("Kranich!7", user.Password);', [("Kranich!7", "password", "Password")]),
        ("go", 'assert.Equal(t, "k.morgen", got.Username)', [("k.morgen", "username", "Username")]),
        ("javascript", "expect(user.email).toBe('ann.lee@corp.io');\nexpect(getPin()).toEqual('4711');",
         [("ann.lee@corp.io", "email", "email"), ("4711", "auth_token", "getPin")]),
        ("java", 'when(contact.getName()).thenReturn("Maria Gonzalez");\nassertThat(acct.getUsername()).isEqualTo("k.morgen");',
         [("Maria Gonzalez", "name", "getName"), ("k.morgen", "username", "getUsername")]),
        # compared with something that names no attribute: no key
        ("java", 'assertEquals("Kranich!7", result);\nexpect(res.status).toBe("Kranich!7");', []),
        ("python", 'self.assertEqual(result, "Kranich")', []),
    ],
    "discriminator keys": [
        ("javascript", "const inputs = [{ field: 'password', input: 'Kranich!7' }, { field: 'city', input: 'Lyon' }];",
         [("Kranich!7", "password", "password"), ("Lyon", "address", "city")]),
        ("json", '[{"type": "username", "value": "k.morgen"}, {"note": "Kranich!7"}]', [("k.morgen", "username", "username")]),
        ("python", 'rows = [{"field": "password", "input": "Kranich"}, {"name": "Maria Gonzalez", "input": "x1"}]',
         [("Kranich", "password", "password"), ("Maria Gonzalez", "name", "name")]),
        # the field name itself is no value of `name`/`label`
        ("javascript", "const f = { name: 'phone', label: 'Contact', value: '0803432167' };",
         [("0803432167", "phone", "phone")]),
        ("python", 'f = {"name": "password", "value": "Kranich"}', [("Kranich", "password", "password")]),
        # the sibling value is not an attribute name, or names an action: nothing
        ("javascript", "const f = { field: 'color', input: 'Kranich!7' };", []),
        ("python", 'ROUTES = [{"name": "reset_password", "handler": "send_reset_mail"}, '
                   '{"label": "Reset password", "hint": "Sends a link"}]', []),
    ],
    "trailing comments": [
        ("python", 'cases = [\n    ("k.morgen", "kmorgen"),  # Username is "k.morgen" and valid.\n'
                   '    ("Kranich!7", True),  # Password is "Kranich!7"\n'
                   '    ("ok", "fine"),  # login succeeded (no value quoted: no key)\n]\n',
         [("k.morgen", "username", "Username"), ("kmorgen", "username", "Username"), ("Kranich!7", "password", "Password")]),
        ("csharp", 'var rows = new[] {\n  ("5555555555554444", "x"),  // Credit card is "5555555555554444"\n'
                   '  ("Kranich!7", "y"),  // password for "Kranich!7"\n};',
         [("5555555555554444", "credit_card", "Credit_card"), ("Kranich!7", "password", "password")]),
    ],
}


@pytest.mark.parametrize("lang,code,expected", [r for rows in MODEL_OUTPUT_CLASSES.values() for r in rows],
                         ids=[f"{k}-{i}" for k, rows in MODEL_OUTPUT_CLASSES.items() for i in range(len(rows))])
def test_keys_of_the_model_output_classes(tax, lang, code, expected):
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in extract(code, tax, language=lang)
            if c["validity"]["ok"]] == expected
