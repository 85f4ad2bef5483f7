"""ExtractPII recall on values the project did not write (issue #17, item 2).

Two sources, both rebuilt from scratch by this script, labelled by validators only (never
by ExtractPII):

1. **Third-party test suites.** The sdists of ``schwifty`` (IBAN/BIC), ``validators`` and
   ``Faker`` are downloaded at pinned versions with ``pip download`` into
   ``.cache/eval/`` (reused when present); every string constant of their ``tests/**.py``
   files (Python ``ast``) is labelled: ``email`` when ``email-validator`` accepts it,
   ``bank_statement`` when ``python-stdnum`` accepts it as an IBAN, ``credit_card`` when
   ``validators`` accepts it as a card of a known brand (issuer prefix, length, Luhn; spaces
   and dashes allowed), ``phone`` when it starts with ``+`` and ``phonenumbers`` calls it a valid
   number. Each file is then given to ``extract(text, taxonomy, language="python")``.
2. **Faker values in realistic test code.** Faker (seeded, 7 locales) generates e-mails,
   phone numbers, IBANs and card numbers, placed in six kinds of test code: pytest
   ``parametrize`` rows, Jest ``it()`` blocks, JUnit tests with a constructor call, Go
   table-driven tests, a JSON fixture and an SQL ``INSERT`` held in a Python string. A
   generated value is labelled with its attribute only when the same validators accept
   it (Faker phone numbers with the locale as region); unlabelled values are not counted.

Per attribute: ``found`` = labelled values that ExtractPII returned at all (a value equal
after stripping), ``right`` = returned with the labelled attribute. For the generated code
every value is known, so precision is also reported there (a candidate is correct when it
is one of the placed values; placed values the validators reject count as correct too,
since extraction keeps keyed values for the rules to judge).

    .venv/bin/python benchmarks/eval_extract.py [--n 40] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.extract import extract  # noqa: E402
from testleak.taxonomy import Taxonomy  # noqa: E402

SDISTS = {"schwifty": "2026.10.1", "validators": "0.36.0", "faker": "40.54.0"}
LOCALES = {"en_US": "US", "de_DE": "DE", "fr_FR": "FR", "es_ES": "ES", "zh_CN": "CN", "en_GB": "GB", "ja_JP": "JP"}
ATTRS = ("email", "phone", "bank_statement", "credit_card")


# --- labels: validators only ------------------------------------------------------------
def _card_brand(digits: str) -> bool:
    """A payment card number by the ``validators`` package: a known issuer prefix with that
    brand's length, and the Luhn check (Luhn alone accepts one random digit string in ten,
    e.g. German BBANs and French social security numbers in third-party test suites)."""
    import validators as v

    return any(f(digits) is True for f in (v.visa, v.mastercard, v.amex, v.unionpay, v.diners, v.jcb,
                                            v.discover, v.mir))


def label(value: str, region: str | None = None) -> str | None:
    """The attribute the validators give ``value`` (see the module docstring), else None."""
    import phonenumbers
    from email_validator import EmailNotValidError, validate_email
    from stdnum import iban

    s = value.strip()
    if not s or len(s) > 320:
        return None
    if "@" in s:
        try:
            validate_email(s, check_deliverability=False, allow_quoted_local=True)
            return "email"
        except (EmailNotValidError, Exception):  # noqa: BLE001
            return None
    if re.fullmatch(r"[A-Za-z]{2}\d{2}[A-Za-z0-9 ]{10,40}", s) and iban.is_valid(s):
        return "bank_statement"
    digits = re.sub(r"[ -]", "", s)
    if re.fullmatch(r"[\d -]+", s) and _card_brand(digits):
        return "credit_card"
    if (s.startswith("+") or region) and re.fullmatch(r"[+\d\s().\-x]{7,30}", s):
        try:
            n = phonenumbers.parse(s, None if s.startswith("+") else region)
            if phonenumbers.is_valid_number(n):
                return "phone"
        except phonenumbers.NumberParseException:
            pass
    return None


# --- source 1: third-party test suites ----------------------------------------------------
def sdist_tests(cache: Path) -> dict[str, list[tuple[str, str]]]:
    """``{package: [(path, text), ...]}`` of the ``tests/**.py`` files of each pinned sdist."""
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[tuple[str, str]]] = {}
    for pkg, ver in SDISTS.items():
        tgz = cache / f"{pkg}-{ver}.tar.gz"
        if not tgz.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            f"{pkg}=={ver}", "-d", str(cache)], check=True)
        with tarfile.open(tgz) as tf:
            out[pkg] = [(m.name, tf.extractfile(m).read().decode("utf-8", "replace")) for m in tf.getmembers()
                        if m.isfile() and m.name.endswith(".py") and "/tests/" in m.name]
    return out


def string_constants(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


# --- source 2: Faker values in test code ------------------------------------------------------
def _rows(n: int, seed: int) -> list[dict]:
    from faker import Faker

    rows = []
    for i in range(n):
        loc = list(LOCALES)[i % len(LOCALES)]
        f = Faker(loc)
        f.seed_instance(seed * 100_003 + i)
        rows.append({"region": LOCALES[loc], "email": f.company_email() if i % 2 else f.free_email(),
                     "phone": f.phone_number(), "iban": f.iban(), "card": f.credit_card_number()})
    return rows


def _q(s: str, quote: str = '"') -> str:
    return s.replace("\\", "\\\\").replace(quote, "\\" + quote)


def generated_files(n: int, seed: int) -> list[tuple[str, str, str, list[dict]]]:
    """``(kind, language, code, rows)`` for each kind of test code, ``n`` rows in total."""
    rows = _rows(n, seed)
    k = max(1, n // 6)
    chunks = [rows[i:i + k] for i in range(0, len(rows), k)]
    out = []
    for j, part in enumerate(chunks):
        kind = ("pytest", "jest", "junit", "go", "json", "sql")[j % 6]
        if kind == "pytest":
            body = ",\n".join(f'    ("{_q(r["email"])}", "{_q(r["phone"])}", "{r["iban"]}", "{r["card"]}")' for r in part)
            code = ("import pytest\n\n@pytest.mark.parametrize(\"email,phone,iban,card_number\", [\n" + body +
                    "\n])\ndef test_register(email, phone, iban, card_number):\n"
                    "    assert register(email, phone, iban, card_number).ok\n")
            lang = "python"
        elif kind == "jest":
            code = "".join(f"it('registers customer {i}', () => {{\n  const customer = {{ email: '{_q(r['email'], chr(39))}', "
                           f"phone: '{_q(r['phone'], chr(39))}', iban: '{r['iban']}', cardNumber: '{r['card']}' }};\n"
                           f"  expect(register(customer)).toBe(true);\n}});\n" for i, r in enumerate(part))
            lang = "javascript"
        elif kind == "junit":
            code = "class CustomerTest {\n" + "".join(
                f"  @Test\n  void pays{i}() {{\n    Customer c = new Customer(\"{_q(r['email'])}\", \"{_q(r['phone'])}\", "
                f"\"{r['iban']}\", \"{r['card']}\");\n    assertTrue(service.pay(c));\n  }}\n" for i, r in enumerate(part)) + "}\n"
            lang = "java"
        elif kind == "go":
            code = ("func TestRegister(t *testing.T) {\n\ttests := []struct{ email, phone, iban, card string }{\n" +
                    "".join(f'\t\t{{"{_q(r["email"])}", "{_q(r["phone"])}", "{r["iban"]}", "{r["card"]}"}},\n' for r in part) +
                    "\t}\n\tfor _, tc := range tests {\n\t\tif !Register(tc.email, tc.phone) { t.Fail() }\n\t}\n}\n")
            lang = "go"
        elif kind == "json":
            code = json.dumps([{"email": r["email"], "phone": r["phone"], "iban": r["iban"], "card_number": r["card"]}
                               for r in part], ensure_ascii=False, indent=2)
            lang = "json"
        else:
            vals = ",\n".join("    ('{}', '{}', '{}', '{}')".format(*(x.replace("'", "''") for x in
                              (r["email"], r["phone"], r["iban"], r["card"]))) for r in part)
            code = ('SEED = """\nINSERT INTO customers (email, phone, iban, card_number) VALUES\n' + vals +
                    ';\n"""\n\ndef test_seed(db):\n    db.execute(SEED)\n')
            lang = "python"
        out.append((kind, lang, code, part))
    return out


# --- scoring -------------------------------------------------------------------------------------
def score(labelled: list[tuple[str, str]], cands: list[dict], tally: dict) -> None:
    got: dict[str, set[str]] = defaultdict(set)
    for c in cands:
        got[c["value"].strip()].add(c["attribute"])
    for value, attr in labelled:
        t = tally[attr]
        t["n"] += 1
        attrs = got.get(value.strip(), set())
        t["found"] += bool(attrs)
        t["right"] += attr in attrs


def table(title: str, tally: dict) -> str:
    lines = [f"{title}", "| attribute | labelled | found | recall | right attribute |", "|---|---|---|---|---|"]
    for a in ATTRS:
        t = tally.get(a)
        if not t or not t["n"]:
            continue
        lines.append(f"| {a} | {t['n']} | {t['found']} | {100 * t['found'] / t['n']:.1f} % | "
                     f"{100 * t['right'] / t['n']:.1f} % |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=120, help="generated rows (each: email, phone, IBAN, card)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "eval")
    ap.add_argument("--json", type=Path, default=None, help="also write the counts here")
    a = ap.parse_args(argv)
    tax = Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))
    result: dict = {}

    third = defaultdict(lambda: Counter())
    per_pkg: dict[str, dict] = {}
    for pkg, files in sdist_tests(a.cache).items():
        tp = defaultdict(lambda: Counter())
        for _, text in files:
            labelled = [(v, lab) for v in dict.fromkeys(string_constants(text)) if (lab := label(v))]
            if not labelled:
                continue
            cands = extract(text, tax, language="python")
            score(labelled, cands, third)
            score(labelled, cands, tp)
        per_pkg[pkg] = tp
        print(table(f"\n{pkg}=={SDISTS[pkg]} tests/ ({len(files)} files)", tp))
    print(table("\nthird-party test suites, all", third))
    result["third_party"] = {k: dict(v) for k, v in third.items()}

    gen = defaultdict(lambda: Counter())
    placed_all, cand_total, cand_ok = set(), 0, 0
    for kind, lang, code, rows in generated_files(a.n, a.seed):
        labelled = []
        for r in rows:
            for field, attr in (("email", "email"), ("phone", "phone"), ("iban", "bank_statement"), ("card", "credit_card")):
                placed_all.add(r[field].strip())
                if label(r[field], r["region"]) == attr:
                    labelled.append((r[field], attr))
        cands = extract(code, tax, language=lang)
        score(labelled, cands, gen)
        cand_total += len(cands)
        cand_ok += sum(c["value"].strip() in placed_all for c in cands)
    print(table(f"\nFaker values in test code ({a.n} rows x 4 values; pytest, Jest, JUnit, Go, JSON, SQL)", gen))
    prec = 100 * cand_ok / cand_total if cand_total else 0.0
    print(f"precision on the generated code: {cand_ok}/{cand_total} = {prec:.1f} %")
    result["generated"] = {k: dict(v) for k, v in gen.items()}
    result["generated_precision"] = [cand_ok, cand_total]
    if a.json:
        a.json.write_text(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
