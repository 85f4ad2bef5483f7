"""ExtractPII per attribute: 5 snippets that must yield exactly the listed candidates and
5 that must yield nothing, for each of the 15 attributes (Python, JavaScript, Java, JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testleak.extract import extract
from testleak.taxonomy import Taxonomy
from testleak.verify.rules import check

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tax() -> Taxonomy:
    return Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))


# (attribute, language, snippet, [(value, attribute, pattern), ...])
POSITIVE = [
    # name
    ("name", "python", 'create_user(name="Maria Gonzalez")', [("Maria Gonzalez", "name", "lexicon")]),
    ("name", "javascript", 'const user = { firstName: "Haruto" };', [("Haruto", "name", "lexicon")]),
    ("name", "java", 'customer.setFullName("Olivia Brown");', [("Olivia Brown", "name", "lexicon")]),
    ("name", "json", '{"last_name": "O\'Connor"}', [("O'Connor", "name", "lexicon")]),
    ("name", "python", 'employee.display_name = "Jean-Luc Picard"', [("Jean-Luc Picard", "name", "lexicon")]),
    # address
    ("address", "python", 'a = Address(street="742 Evergreen Terrace")', [("742 Evergreen Terrace", "address", "lexicon")]),
    ("address", "javascript", '{ city: "Springfield" }', [("Springfield", "address", "lexicon")]),
    ("address", "java", 'order.setShippingAddress("1600 Pennsylvania Ave NW, Washington, DC 20500");',
     [("1600 Pennsylvania Ave NW, Washington, DC 20500", "address", "lexicon")]),
    ("address", "json", '{"zip_code": "90210"}', [("90210", "address", "lexicon")]),
    ("address", "python", 'register("10 Downing Street, London")', [("10 Downing Street, London", "address", "street")]),
    # email
    ("email", "python", 'send(to_addr="nina.petrova@yandex.ru")', [("nina.petrova@yandex.ru", "email", "email")]),
    ("email", "javascript", 'const email = "li.wei@qq.com";', [("li.wei@qq.com", "email", "email")]),
    ("email", "java", 'user.setEmail("raj.patel@outlook.com");', [("raj.patel@outlook.com", "email", "email")]),
    ("email", "json", '{"contact": "marco.rossi@libero.it"}', [("marco.rossi@libero.it", "email", "email")]),
    ("email", "python", 'username = "sven@firma.de"', [("sven@firma.de", "email", "email")]),
    # phone
    ("phone", "python", 'c = Contact(phone="+1 415-555-2671")', [("+1 415-555-2671", "phone", "phone")]),
    ("phone", "javascript", '{ mobile: "+44 7911 123456" }', [("+44 7911 123456", "phone", "phone")]),
    ("phone", "java", 'assertTrue(validatePhoneNumber("(415) 555-2671"));', [("(415) 555-2671", "phone", "phone")]),
    ("phone", "json", '{"tel": "+86 138 0013 8000"}', [("+86 138 0013 8000", "phone", "phone")]),
    ("phone", "python", 'dial("+49 30 901820")', [("+49 30 901820", "phone", "phone")]),
    # date_of_birth
    ("date_of_birth", "python", 'Person(dob="1990-05-17")', [("1990-05-17", "date_of_birth", "date")]),
    ("date_of_birth", "javascript", '{ birthDate: "12/25/1985" }', [("12/25/1985", "date_of_birth", "date")]),
    ("date_of_birth", "java", 'patient.setDateOfBirth("1978-11-03");', [("1978-11-03", "date_of_birth", "date")]),
    ("date_of_birth", "json", '{"birthday": "03.04.1969"}', [("03.04.1969", "date_of_birth", "date")]),
    ("date_of_birth", "python", 'dob = date(1985, 3, 2)', [("1985-03-02", "date_of_birth", "date")]),
    # identity
    ("identity", "python", 'ssn = "536-22-1234"', [("536-22-1234", "identity", "lexicon")]),
    ("identity", "javascript", '{ passportNumber: "X12345678" }', [("X12345678", "identity", "lexicon")]),
    ("identity", "java", 'emp.setNationalId("110101199003077777");', [("110101199003077777", "identity", "lexicon")]),
    ("identity", "json", '{"driver_license": "D1234-5678-9012"}', [("D1234-5678-9012", "identity", "lexicon")]),
    ("identity", "python", 'lookup("536-22-1234")', [("536-22-1234", "identity", "ssn")]),
    # medical_record
    ("medical_record", "python", 'p = Patient(diagnosis="Type 2 Diabetes")', [("Type 2 Diabetes", "medical_record", "lexicon")]),
    ("medical_record", "javascript", '{ allergies: "Penicillin" }', [("Penicillin", "medical_record", "lexicon")]),
    ("medical_record", "java", 'record.setBloodType("O+");', [("O+", "medical_record", "lexicon")]),
    ("medical_record", "json", '{"medication": "Metformin 500mg"}', [("Metformin 500mg", "medical_record", "lexicon")]),
    ("medical_record", "python", 'conditions = ["Hypertension", "Asthma"]',
     [("Hypertension", "medical_record", "lexicon"), ("Asthma", "medical_record", "lexicon")]),
    # bank_statement
    ("bank_statement", "python", 'acct = BankAccount(iban="GB82 WEST 1234 5698 7654 32")',
     [("GB82 WEST 1234 5698 7654 32", "bank_statement", "lexicon")]),
    ("bank_statement", "javascript", '{ accountNumber: "12345678" }', [("12345678", "bank_statement", "lexicon")]),
    ("bank_statement", "java", 'transfer.setSwift("DEUTDEFF");', [("DEUTDEFF", "bank_statement", "lexicon")]),
    ("bank_statement", "json", '{"routing_number": "021000021"}', [("021000021", "bank_statement", "lexicon")]),
    ("bank_statement", "python", 'pay("DE89 3704 0044 0532 0130 00")', [("DE89 3704 0044 0532 0130 00", "bank_statement", "iban")]),
    # political
    ("political", "python", 'v = Voter(party="Green Party")', [("Green Party", "political", "lexicon")]),
    ("political", "javascript", '{ politicalAffiliation: "Libertarian" }', [("Libertarian", "political", "lexicon")]),
    ("political", "java", 'profile.setIdeology("Social Democrat");', [("Social Democrat", "political", "lexicon")]),
    ("political", "json", '{"political_view": "Conservative"}', [("Conservative", "political", "lexicon")]),
    ("political", "python", 'prefs = {"vote": "Labour"}', [("Labour", "political", "lexicon")]),
    # password
    ("password", "python", 'login(password="Tr0ub4dor&3")', [("Tr0ub4dor&3", "password", "lexicon")]),
    ("password", "javascript", 'const pwd = "hunter2!";', [("hunter2!", "password", "lexicon")]),
    ("password", "java", 'user.setPassword("P@ssw0rd2019");', [("P@ssw0rd2019", "password", "lexicon")]),
    ("password", "json", '{"db_password": "mysql_root_77"}', [("mysql_root_77", "password", "lexicon")]),
    ("password", "python", 'os.environ["DB_PASSWORD"] = "Zx9!kLm#q"', [("Zx9!kLm#q", "password", "lexicon")]),
    # auth_token
    ("auth_token", "python", 'verify_otp(otp="482913")', [("482913", "auth_token", "lexicon")]),
    ("auth_token", "javascript", '{ pin: "4821" }', [("4821", "auth_token", "lexicon")]),
    ("auth_token", "java", 'session.setAccessToken("a1b2c3d4e5f6");', [("a1b2c3d4e5f6", "auth_token", "lexicon")]),
    ("auth_token", "json", '{"refresh_token": "rt_9f8e7d6c5b4a"}', [("rt_9f8e7d6c5b4a", "auth_token", "lexicon")]),
    ("auth_token", "python", 'headers = {"Authorization": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def"}',
     [("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abc123def", "auth_token", "jwt")]),
    # secret_key
    ("secret_key", "python", 'client = Client(api_key="sk-proj-A1b2C3d4E5f6G7h8I9j0")',
     [("sk-proj-A1b2C3d4E5f6G7h8I9j0", "secret_key", "prefix:sk")]),
    ("secret_key", "javascript", 'const key = "AKIAIOSFODNN7EXAMPLE";', [("AKIAIOSFODNN7EXAMPLE", "secret_key", "prefix:akia")]),
    ("secret_key", "java", 'config.setClientSecret("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");',
     [("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "secret_key", "lexicon")]),
    ("secret_key", "json", '{"token": "ghp_ABCdef1234567890abcdef1234567890ABCD"}',
     [("ghp_ABCdef1234567890abcdef1234567890ABCD", "secret_key", "prefix:ghp")]),
    ("secret_key", "python", 'PRIVATE = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"',
     [("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", "secret_key", "hex64")]),
    # credit_card
    ("credit_card", "python", 'pay(card_number="4111 1111 1111 1111")', [("4111 1111 1111 1111", "credit_card", "luhn")]),
    ("credit_card", "javascript", '{ cardNumber: "5500-0000-0000-0004" }', [("5500-0000-0000-0004", "credit_card", "luhn")]),
    ("credit_card", "java", 'payment.setCvv("737");', [("737", "credit_card", "lexicon")]),
    ("credit_card", "json", '{"expiry": "12/28"}', [("12/28", "credit_card", "lexicon")]),
    ("credit_card", "python", 'charge("378282246310005")', [("378282246310005", "credit_card", "luhn")]),
    # username
    ("username", "python", 'acc = Account(username="dark_knight92")', [("dark_knight92", "username", "lexicon")]),
    ("username", "javascript", '{ login: "jsmith" }', [("jsmith", "username", "lexicon")]),
    ("username", "java", 'player.setGamertag("xXSniperXx");', [("xXSniperXx", "username", "lexicon")]),
    ("username", "json", '{"user_name": "mchen"}', [("mchen", "username", "lexicon")]),
    ("username", "python", 'handle = "@coder_ann"', [("@coder_ann", "username", "lexicon")]),
    # biometric
    ("biometric", "python", 's = Scan(fingerprint_hash="a3f5c2e1b7d9")', [("a3f5c2e1b7d9", "biometric", "lexicon")]),
    ("biometric", "javascript", '{ faceId: "face_tmpl_83jd92" }', [("face_tmpl_83jd92", "biometric", "lexicon")]),
    ("biometric", "java", 'user.setVoiceprint("vp-7781-aa9c");', [("vp-7781-aa9c", "biometric", "lexicon")]),
    ("biometric", "json", '{"iris_scan": "IRIS-0042-9917"}', [("IRIS-0042-9917", "biometric", "lexicon")]),
    ("biometric", "python", 't = {"biometric_template": "Rk1SACAyMAAAAAE"}', [("Rk1SACAyMAAAAAE", "biometric", "lexicon")]),
]

# (attribute, language, snippet): no candidate the format rules accept: either none at all
# (non-values, other keys), or a value its key names kept without the attribute's shape
# (``validity.ok`` False), which the rules then reject
NEGATIVE = [
    ("name", "python", 'name = "x"'),
    ("name", "python", 'name = "Alice123"'),
    ("name", "javascript", "const name = `${first} ${last}`;"),
    ("name", "java", 'String name = "<NAME>";'),
    ("name", "python", 'title = "Astor Quell"'),
    ("address", "python", 'address = ""'),
    ("address", "python", 'city = "{city}"'),
    ("address", "javascript", 'const address = "   ";'),
    ("address", "java", 'String street = "%s %s";'),
    ("address", "json", '{"label": "742 Evergreen"}'),
    ("email", "python", 'email = "invalid-email"'),
    ("email", "javascript", 'const email = "user@";'),
    ("email", "java", 'String email = "john.doe at corp";'),
    ("email", "json", '{"email": "<EMAIL>"}'),
    ("email", "python", 'email = "@corp.io"'),
    ("phone", "python", 'phone = "123"'),
    ("phone", "javascript", 'const phone = "not a phone";'),
    ("phone", "java", 'String phone = "12";'),
    ("phone", "json", '{"phone": "+1"}'),
    ("phone", "python", 'version = "1.2.3-4"'),
    ("date_of_birth", "python", 'created_at = "1990-05-17"'),
    ("date_of_birth", "javascript", '{ dob: "n/a" }'),
    ("date_of_birth", "java", 'String birthDate = "unknown";'),
    ("date_of_birth", "json", '{"dob": "yesterday"}'),
    ("date_of_birth", "python", 'dob = "31/02/1990"'),
    ("identity", "python", 'ssn = "none"'),
    ("identity", "javascript", '{ passport: "ABC" }'),
    ("identity", "java", 'String nationalId = "12";'),
    ("identity", "json", '{"tax_id": "n/a"}'),
    ("identity", "python", 'lookup("666-12-3456")'),
    ("medical_record", "python", 'diagnosis = "1234"'),
    ("medical_record", "javascript", '{ diagnosis: "" }'),
    ("medical_record", "java", 'String medication = "%s";'),
    ("medical_record", "json", '{"notes": "Type 2 Diabetes"}'),
    ("medical_record", "python", 'diagnosis = f"{code}"'),
    ("bank_statement", "python", 'iban = "12345678"'),
    ("bank_statement", "javascript", '{ balance: "-" }'),
    ("bank_statement", "java", 'String accountNumber = "${ACCOUNT}";'),
    ("bank_statement", "json", '{"bank": {}}'),
    ("bank_statement", "python", 'pay("DE89 3704 0044 0532 0130 01")'),
    ("political", "python", 'party = "1"'),
    ("political", "javascript", '{ party: "123" }'),
    ("political", "java", 'String party = "{0}";'),
    ("political", "json", '{"opinion": "Labour"}'),
    ("political", "python", 'party = "<POLITICAL>"'),
    ("password", "python", 'password = "abc"'),
    ("password", "javascript", '{ password: "" }'),
    ("password", "java", 'String password = "password";'),
    ("password", "json", '{"password": "********"}'),
    ("password", "python", 'password = "your_password_here"'),
    ("auth_token", "python", 'token = "abc"'),
    ("auth_token", "javascript", '{ otp: "12 34" }'),
    ("auth_token", "java", 'String token = "{token}";'),
    ("auth_token", "json", '{"token": "<TOKEN>"}'),
    ("auth_token", "python", 'pin = "x"'),
    ("secret_key", "python", 'api_key = "short"'),
    ("secret_key", "javascript", "{ apiKey: process.env.API_KEY }"),
    ("secret_key", "java", 'String secret = "changeme";'),
    ("secret_key", "json", '{"api_key": "YOUR_API_KEY"}'),
    ("secret_key", "python", 'api_key = "sk-"'),
    ("credit_card", "python", 'card_number = "1234"'),
    ("credit_card", "javascript", '{ cvv: "12" }'),
    ("credit_card", "java", 'String expiry = "13/28";'),
    ("credit_card", "json", '{"card": "4111"}'),
    ("credit_card", "python", 'charge("4111 1111 1111 1112")'),
    ("username", "python", 'username = "a"'),
    ("username", "javascript", '{ username: "john doe" }'),
    ("username", "java", 'String username = "username";'),
    ("username", "json", '{"username": "%s"}'),
    ("username", "python", 'username = f"user{i}"'),
    ("biometric", "python", 'fingerprint = "abc"'),
    ("biometric", "javascript", '{ fingerprint: "" }'),
    ("biometric", "java", 'String faceId = "{}";'),
    ("biometric", "json", '{"fingerprint": "<BIOMETRIC>"}'),
    ("biometric", "python", 'fingerprint = "****"'),
]


def test_tables_cover_every_attribute_five_times(tax):
    for table in (POSITIVE, NEGATIVE):
        counts = {a: sum(1 for row in table if row[0] == a) for a in tax.attributes}
        assert counts == {a: 5 for a in tax.attributes}
    langs = {row[1] for row in POSITIVE} | {row[1] for row in NEGATIVE}
    assert {"python", "javascript", "java", "json"} <= langs


@pytest.mark.parametrize("attr,lang,snippet,expected", POSITIVE, ids=[f"{r[0]}-{i}" for i, r in enumerate(POSITIVE)])
def test_positive(tax, attr, lang, snippet, expected):
    got = extract(snippet, tax, language=lang)
    assert [(c["value"], c["attribute"], c["evidence"]["pattern"]) for c in got] == expected
    for c in got:
        s, e = c["evidence"]["span"]
        if c["value"] in snippet:  # verbatim values: the span points at them
            assert snippet[s:e] == c["value"]
        assert c["language"] == lang
        assert c["test_index"] == 0


@pytest.mark.parametrize("attr,lang,snippet", NEGATIVE, ids=[f"{r[0]}-{i}" for i, r in enumerate(NEGATIVE)])
def test_negative(tax, attr, lang, snippet):
    for c in extract(snippet, tax, language=lang):
        assert c["attribute"] == attr and c["validity"]["ok"] is False, c["validity"]
        assert check(c["attribute"], c["value"], c["validity"])["ok"] is False
