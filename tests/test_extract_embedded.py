"""ExtractPII's rules of rounds 11 to 15, each on rows it must find and rows it must leave alone:
a value inside a one-line literal (a header's credential, a ``Label: value`` line whose label may
name alternatives, a sentence that states a value, a URL's query parameters), a mask's whole
output, the literal a named function returns, a person's name under a key naming the users,
environment variable names and test titles, CamelCase full names, login dates, a producer's
input, fields of prose (in parentheses, labels naming alternatives, several code spans), a
person's record in one string, a qualified call's argument, an e-mail inside a longer string, a
street under a name key, a named variable inside a label's value and the blanks around a value."""

from __future__ import annotations

import pytest

from testleak.extract import extract
from testleak.extract.embedded import embedded_value, label_keys


def got(tax, code, lang):
    return [(c["value"], c["attribute"], c["validity"]["ok"]) for c in extract(code, tax, language=lang)]


EMBEDDED = [
    # the credential of a header, under the literal's key or by the header's shape
    ("csharp", 'string userAccessToken = "Bearer exampleAccessToken";', [("exampleAccessToken", "auth_token", True)]),
    ("python", 'headers = {"Authorization": "Token abc123XYZtoken"}', [("abc123XYZtoken", "auth_token", True)]),
    ("python", 'h = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"',
     [("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "auth_token", True)]),
    ("java", 'String accessToken = "Bearer YOUR_ACCESS_TOKEN";', [("YOUR_ACCESS_TOKEN", "auth_token", False)]),
    # a short credential is still the part after the scheme, never the whole header
    ("python", 'headers = {"Authorization": "Bearer ya29."}', [("ya29.", "auth_token", True)]),
    ("python", 'token = "Bearer abc"', [("abc", "auth_token", False)]),
    # ...but without a key saying so, a header of a short credential is no value
    ("python", 'x = "Bearer abc"', []),
    # a one-line "Label: value": the label's attribute, whatever the literal's own key
    ("python", 'assert get_email(u) == "Email: bob@corp.io"', [("bob@corp.io", "email", True)]),
    ("python", 'line = "Phone: +1 415 555 0132"', [("+1 415 555 0132", "phone", True)]),
    ("javascript", 'expect(card).toBe("Name: Maria Lopez");', [("Maria Lopez", "name", True)]),
    # a sentence stating a value with a digit or a symbol, under its last words
    ("python", 'msg = "Your temporary password is 3t9y5gP!"', [("3t9y5gP!", "password", True)]),
    ("java", 'String m = "The API key is sk_test_4eC39HqLyjWDarjtT1zdp7dc.";',
     [("sk_test_4eC39HqLyjWDarjtT1zdp7dc", "secret_key", True)]),
    # not values: words after "is", labels that name no attribute, URLs
    ("python", 'msg = "The password is incorrect."', []),
    ("python", 'err = "Error: invalid input"', []),
    ("python", 'url = "http://example.com/login"', []),
    ("python", 'status = "Build: 42"', []),
]


@pytest.mark.parametrize("lang,code,expected", EMBEDDED)
def test_a_value_inside_a_one_line_literal(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


def test_embedded_value_parts():
    e = embedded_value("  Bearer abc.def-123")
    assert (e.label, e.value, "  Bearer abc.def-123"[e.offset:]) == (None, "abc.def-123", "abc.def-123")
    e = embedded_value("User name: ann_l")
    assert (e.label, e.value) == ("User name", "ann_l")
    assert embedded_value("first line: a\nsecond: b") is None
    assert embedded_value("Welcome back, dear user") is None
    assert label_keys("Your temporary password") == ["your_temporary_password", "temporary_password", "password"]


MASKS = [
    ("java", 'String expectedAddress = "************";', []),
    ("python", 'assert mask_ssn(s) == "***-**-****"', []),
    ("python", 'dob = "XXXX-XX-XX"', []),
    # part of the value left: kept under its key for the rules, which drop it as masked
    ("python", 'card_number = "**** **** **** 4242"', [("**** **** **** 4242", "credit_card", False)]),
    # a long mask run with a tail (a regex that backtracks on it hangs ExtractPII on this row)
    ("python", 'token = "' + "X" * 40 + '!"', [("X" * 40 + "!", "auth_token", False)]),
]


@pytest.mark.parametrize("lang,code,expected", MASKS)
def test_a_mask_output_is_no_value(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


RETURNS = [
    ("python", 'def get_api_key():\n    return "sk_test_abc123XYZ"\n', [("sk_test_abc123XYZ", "secret_key", True)]),
    ("csharp", 'public static string GenerateOAuthToken(string redirectUri) {\n    return "ExampleOAuthToken";\n}\n',
     [("ExampleOAuthToken", "auth_token", True)]),
    ("java", 'public String getUserId() {\n    return "user123";\n}\n', [("user123", "username", True)]),
    ("javascript", 'function getPassword() {\n  return "hunter2!";\n}\n', [("hunter2!", "password", True)]),
    ("go", 'func GetToken() string {\n\treturn "tok_abc123"\n}\n', [("tok_abc123", "auth_token", True)]),
    # a function whose name says nothing, or transforms its input (derived data): no value
    ("java", 'public String helper() {\n    return "user123";\n}\n', []),
    ("python", 'def hash_password(p):\n    return "5f4dcc3b5aa765d61d8327deb882cf99"\n', []),
    # the innermost function decides: the inner helper's name says nothing
    ("javascript", 'function getPassword() {\n  function pad() {\n    return "zz9!x";\n  }\n  return pad();\n}\n', []),
]


@pytest.mark.parametrize("lang,code,expected", RETURNS)
def test_a_returned_literal_takes_the_functions_name(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


PEOPLE_UNDER_USER_KEYS = [
    # a key naming the users themselves (users, members): a person's full name there is a name
    ("python", 'users = ["Ines Moreau", "Tomas Vidal"]', [("Ines Moreau", "name", True), ("Tomas Vidal", "name", True)]),
    ("python", 'members = [User("Ann Lee"), User("Bo Chen")]', [("Ann Lee", "name", True), ("Bo Chen", "name", True)]),
    # a username key names the login field: what is passed as one is a username, however shaped
    ("python", 'user = User(username="Maria Garcia", email="m@x.io")', [("Maria Garcia", "username", False), ("m@x.io", "email", True)]),
    # login names stay usernames; words that are no person's name stay off-shape usernames
    ("python", 'users = ["alice_j", "bob99"]', [("alice_j", "username", True), ("bob99", "username", True)]),
    ("python", 'username = "user name with spaces"', [("user name with spaces", "username", False)]),
]


@pytest.mark.parametrize("lang,code,expected", PEOPLE_UNDER_USER_KEYS)
def test_a_persons_name_under_a_user_key(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


ROUND12 = [
    # a label naming alternatives ("PIN/Token") still names the value's attribute
    ("csharp", 'var cases = new List<string> { "Authentication PIN/Token: 730516" };', [("730516", "auth_token", True)]),
    ("python", 'line = "Account/User Name: oskar.lind"', [("oskar.lind", "username", True)]),
    # the name an environment lookup is given is a variable's name, never its value
    ("python", 'k = os.environ.get("PAYMENT_SECRET_KEY")\nt = os.getenv("API_TOKEN", "dev-token-123")', [("dev-token-123", "auth_token", True)]),
    ("javascript", 'const secretKey = process.env["SECRET_KEY"];', []),
    ("java", 'String secretKey = System.getenv("AWS_SECRET_KEY");', []),
    # a full name written as one CamelCase word, under a bare name key, is a person's name
    ("csharp", 'var r = new Req { Name = "InesMoreau", Password = "Kettle!Moss42" };', [("InesMoreau", "name", True), ("Kettle!Moss42", "password", True)]),
    ("python", 'item = {"name": "ReadMe"}', []),
    # a date under a login key is when, not who
    ("python", 'p = {"last_login": "2021-04-15", "username": "kim77"}', [("kim77", "username", True)]),
]


def test_a_producers_input_is_not_what_it_produces(taxonomy):
    """GenerateSecureToken(data) names its output: the data passed in is no token. A checker's
    name still names its input (IsValidUsername(s))."""
    code = '''```csharp
class S {
    public static string GenerateSecureToken(string data) { return data; }
    public static bool IsValidUsername(string s) { return true; }
    public static void Main() {
        string sampleData = "Sensitive information";
        string secureToken = GenerateSecureToken(sampleData);
        string t1 = "kim_77";
        IsValidUsername(t1);
    }
}
```'''
    found = [(c["value"], c["attribute"], c["evidence"]["key"]) for c in extract(code, taxonomy, language="csharp", context=[code])]
    assert found == [("kim_77", "username", "IsValidUsername")]


def test_a_field_in_parentheses_of_prose(taxonomy):
    text = ("```python\nprint(1)\n```\n\n1. **Encrypt and Decrypt a Password (Password: Kettle!Moss42)**\n"
            "   - Input: `Kettle!Moss42`\n2. A user (email: ann.lee@corp.io) logs in (see section: intro)\n"
            "3. Rejects a weak one (password: the one from the prompt)\n")
    assert [(c["value"], c["attribute"]) for c in extract(text, taxonomy)] == [
        ("Kettle!Moss42", "password"), ("ann.lee@corp.io", "email")]


ROUND13 = [
    # a URL's query parameters, each under its own name; the URL as a whole is no value
    ("java", 'String p = "/device-unlock?account=oskar_91";', [("oskar_91", "username", True)]),
    ("python", 'url = "https://x.io/api?user=mira_l&token=abc123XYZ987&page=2"',
     [("mira_l", "username", True), ("abc123XYZ987", "auth_token", True)]),
    # a test's title names the test, not a person
    ("java", '@DisplayName("Changing Username")\npublic class T {}\n@Test @DisplayName("Reset the password for Ines Moreau") void t() {}', []),
    ("csharp", '[Fact(DisplayName = "Changing Password")]\npublic void T() {}', []),
    # a digest after its algorithm: the digest, under the literal's key
    ("python", 'user = {"face_id": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}',
     [("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "biometric", True)]),
    ("python", 'h = "sha256:9f86d081884c7d65"', []),
    # ...while a display name outside a test attribute is a person's
    ("csharp", 'var p = new Profile { DisplayName = "Ines Moreau" };', [("Ines Moreau", "name", True)]),
]


ROUND14 = [
    # a person's record packed into one string: the name, then the address or each cell
    ("java", 'String row = "Jonas Berg, 58 Alder Way, Brookfield, USA";',
     [("Jonas Berg", "name", True), ("58 Alder Way, Brookfield, USA", "address", True)]),
    ("csharp", 'var rows = new List<string> { "Ines Moreau, 1979-03-14, EMP-55120" };',
     [("Ines Moreau", "name", True), ("1979-03-14", "date_of_birth", True)]),
    ("python", 'team = "Jonas Berg, Ines Moreau"', [("Jonas Berg", "name", True), ("Ines Moreau", "name", True)]),
    ("python", 'msg = "Hello World, this is fine"', []),
    ("python", 'who = "Berg, Jonas"', []),
    # the sole argument of a qualified call (a parse) takes the name the call is bound to
    ("java", 'Date birthdate = LocalDate.parse("14-03-1979");', [("14-03-1979", "date_of_birth", True)]),
    ("csharp", 'var dateOfBirth = DateTime.Parse("1979-03-14");', [("1979-03-14", "date_of_birth", True)]),
    ("java", 'String password = encoder.encode("Fenwick!Tide7");', [("Fenwick!Tide7", "password", True)]),
    # an e-mail address inside a longer string, never a URL's user@host
    ("csharp", 'string expectedIdentifier = "l.okafor@fernmail.net/5512093";', [("l.okafor@fernmail.net", "email", True)]),
    ("python", 'to = "Ines Moreau <ines.moreau@fernmail.net>"', [("ines.moreau@fernmail.net", "email", True)]),
    ("python", 'link = "mailto:ines.moreau@fernmail.net"', [("ines.moreau@fernmail.net", "email", True)]),
    ("python", 'dsn = "https://jberg:Wq81zzTe@db.fernmail.net/app"', []),
    ("python", 'remote = "git@github.com:org/repo.git"', []),
    # a street under a name key is an address
    ("java", 'String lastName = "58 Alder Way";', [("58 Alder Way", "address", True)]),
    # the value of a named variable inside a label's value
    ("javascript", "const c = { name: 'Password: DB_PASSWORD: Fenwick!Tide7' };", [("Fenwick!Tide7", "password", True)]),
    # a part appended to a value takes its name
    ("csharp", 'class T { void t() { password += "Fenwick!Tide7"; total += 12345; } }', [("Fenwick!Tide7", "password", True)]),
    # the blanks around a value are no part of it (a test of input trimming)
    ("javascript", 'const c = { phone: "   555-867-5309  " };', [("555-867-5309", "phone", True)]),
]


ROUND15 = [
    # a parameterised test's data rows fill its method's parameters
    ("csharp", '[TestCase("jberg", "Fenwick!Tide7")]\npublic void ValidateCredentials(string username, string password) { }',
     [("jberg", "username", True), ("Fenwick!Tide7", "password", True)]),
    ("csharp", '[Theory]\n[InlineData("Harbor#Lamp42")]\npublic void Rejects(string password) { }',
     [("Harbor#Lamp42", "password", True)]),
    # a mapping iterated as pairs whose parts the body reads by name
    ("csharp", 'var cases = new Dictionary<string, string> { {"jberg", "Fenwick!Tide7"} };\n'
               'foreach (var c in cases) { var username = c.Key; var password = c.Value; Check(username, password); }',
     [("jberg", "username", True), ("Fenwick!Tide7", "password", True)]),
    # a given name under an e-mail key is the person
    ("csharp", 'Send(50, recipient: "Ines");', [("Ines", "name", True)]),
    ("python", 'email = "Summer"', [("Summer", "email", False)]),
    # well-known library calls take credentials positionally
    ("python", "server.login('ines.moreau@fernmail.net', 'Harbor#Lamp42')",
     [("ines.moreau@fernmail.net", "email", True), ("Harbor#Lamp42", "password", True)]),
    ("java", 'Connection c = DriverManager.getConnection("jdbc:mysql://db:3306/hr", "jberg", "Fenwick!Tide7");',
     [("jberg", "username", True), ("Fenwick!Tide7", "password", True)]),
    ("python", "auth = HTTPBasicAuth('jberg', 'Fenwick!Tide7')", [("jberg", "username", True), ("Fenwick!Tide7", "password", True)]),
    # a placeholder e-mail keeps the e-mail attribute under a login key
    ("python", "user = 'your-email@example.com'", [("your-email@example.com", "email", False)]),
    # an identifier labels the value inside a string, a quoted value is its inside
    ("java", 'assertEquals("billingAddress: 58 Alder Way, Brookfield", svc.get());', [("58 Alder Way, Brookfield", "address", True)]),
    ("csharp", 'string expectedAddress = "shippingAddress: \'58 Alder Way, Brookfield\'";', [("58 Alder Way, Brookfield", "address", True)]),
]


@pytest.mark.parametrize("lang,code,expected", ROUND12 + ROUND13 + ROUND14 + ROUND15)
def test_round12_to_15_rules(taxonomy, lang, code, expected):
    assert got(taxonomy, code, lang) == expected


def test_a_prose_field_whose_label_names_alternatives(taxonomy):
    text = "```python\nx = 1\n```\n\nTest Case 1:\n- Account/User Name: `oskar_lind`\n- Input: `{'user': 'oskar_lind'}`\n"
    assert [(c["value"], c["attribute"]) for c in extract(text, taxonomy)] == [("oskar_lind", "username")]


def test_a_prose_field_of_several_code_spans(taxonomy):
    text = ('```python\nx = 1\n```\n\n**Test Case 2**:\n'
            '- Date of Birth: `Born on 1979.03.14`. | `"birthday": "1979-03-14"`\n- Email: `ines.moreau@fernmail.net`\n')
    assert [(c["value"], c["attribute"]) for c in extract(text, taxonomy)] == [
        ("1979-03-14", "date_of_birth"), ("ines.moreau@fernmail.net", "email")]


def test_a_rows_parts_read_by_position_take_the_tested_functions_parameters(taxonomy):
    test = ('```csharp\nclass T {\n  void TestHandle() {\n    var cases = new List<Tuple<string, string, DateTime>> {\n'
            '      Tuple.Create("Jonas Berg", "58 Alder Way", DateTime.Parse("1979-03-14")),\n    };\n'
            '    foreach (var c in cases) { var r = MakeHandle(c.Item1, c.Item2, c.Item3); }\n  }\n}\n```')
    under = '```csharp\nclass H {\n  static string MakeHandle(string fullName, string address, DateTime dateOfBirth) { return ""; }\n}\n```'
    assert [(c["value"], c["attribute"], c["evidence"]["key"]) for c in extract(test, taxonomy, context=[under])] == [
        ("Jonas Berg", "name", "fullName"), ("58 Alder Way", "address", "address"), ("1979-03-14", "date_of_birth", "dateOfBirth")]
