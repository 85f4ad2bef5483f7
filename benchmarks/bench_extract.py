"""Benchmark ExtractPII against Yelp's detect-secrets on real test files found offline.

Corpus: ``test_*.py`` / ``*_test.py`` files under the venv's site-packages and ``*.test.js``
/ ``*.spec.js`` (else any ``*.js`` under a ``test``/``tests`` directory) under
``/usr/lib/node_modules`` and ``node_modules`` — whatever exists on this machine. Both
tools read the same files in the same run, single process, CPU time (process_time, robust to other load): ours via
``testleak.extract.extract`` (file language from its extension), detect-secrets via
``SecretsCollection.scan_file`` under ``default_settings()`` (all default plugins and
filters). Prints MB/s for both, the ratio, candidate / secret counts (masked nothing:
counts only), how many taxonomy attributes each covers, and our candidates per attribute and
per key (the identifier a value was bound to: names, never values). No assertions on timings.

    .venv/bin/python benchmarks/bench_extract.py [--limit-mb 8] [--seed 0] [--site DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import sysconfig
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testleak.extract import extract  # noqa: E402
from testleak.taxonomy import Taxonomy  # noqa: E402

# detect-secrets plugin -> our attribute (the attributes its findings can stand for)
DETECT_SECRETS_ATTRIBUTES = {
    "secret_key": "AWS/Azure/GitHub/OpenAI/Stripe/... keys, private keys, high entropy strings",
    "password": "KeywordDetector (password = ...), BasicAuth",
    "auth_token": "JWT, Slack/Twilio/Discord/... tokens",
}


def corpus(limit_bytes: int, seed: int, site: Path | None = None) -> list[Path]:
    site = site or Path(sysconfig.get_paths()["purelib"])
    files = sorted(p for p in site.rglob("*.py") if p.name.startswith("test_") or p.name.endswith("_test.py"))
    js: list[Path] = []
    for base in (Path("/usr/lib/node_modules"), ROOT / "node_modules"):
        if base.is_dir():
            js += sorted(p for p in base.rglob("*.js") if p.name.endswith((".test.js", ".spec.js"))
                         or any(part in ("test", "tests", "__tests__") for part in p.parts))
    rnd = random.Random(seed)
    rnd.shuffle(files)
    rnd.shuffle(js)
    out, total = [], 0
    # up to a quarter of the budget for JavaScript, the rest Python
    for group, budget in ((js, limit_bytes // 4), (files, limit_bytes)):
        used = 0
        for p in group:
            try:
                n = p.stat().st_size
            except OSError:
                continue
            if n == 0 or n > 2_000_000 or used + n > budget or total + n > limit_bytes:
                continue
            out.append(p)
            used += n
            total += n
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit-mb", type=float, default=8.0, help="corpus size in MB (default 8)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--site", type=Path, default=None,
                    help="directory of Python packages to draw test files from (default: this interpreter's site-packages)")
    ap.add_argument("--top-keys", type=int, default=12, help="keys listed per attribute (default 12)")
    a = ap.parse_args(argv)
    tax = Taxonomy.from_config(yaml.safe_load((ROOT / "testleak/resources/taxonomy_paper.yaml").read_text()))
    files = corpus(int(a.limit_mb * 1e6), a.seed, a.site)
    texts = {p: p.read_text(encoding="utf-8", errors="replace") for p in files}
    nbytes = sum(p.stat().st_size for p in files)
    langs = Counter("javascript" if p.suffix == ".js" else "python" for p in files)
    print(f"corpus: {len(files)} files, {nbytes / 1e6:.2f} MB ({dict(langs)})")

    t0 = time.process_time()
    ours = Counter()
    by_key: dict[str, Counter] = {}
    for p, text in texts.items():
        for c in extract(text, tax, language="javascript" if p.suffix == ".js" else "python"):
            ours[c["attribute"]] += 1
            by_key.setdefault(c["attribute"], Counter())[c["evidence"].get("key")] += 1
    t_ours = time.process_time() - t0

    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    t0 = time.process_time()
    ds = Counter()
    with default_settings():
        coll = SecretsCollection()
        for p in files:
            coll.scan_file(str(p))
    for _, secret in coll:
        ds[secret.type] += 1
    t_ds = time.process_time() - t0

    mb = nbytes / 1e6
    print(f"ExtractPII     : {mb / t_ours:7.2f} MB/s  ({t_ours:.1f} s, {sum(ours.values())} candidates, "
          f"{len(tax.attributes)} attributes covered, {len(ours)} seen here)")
    print(f"detect-secrets : {mb / t_ds:7.2f} MB/s  ({t_ds:.1f} s, {sum(ds.values())} findings, "
          f"{len(DETECT_SECRETS_ATTRIBUTES)} attributes covered: {', '.join(DETECT_SECRETS_ATTRIBUTES)})")
    print(f"speed ratio ours/detect-secrets: {t_ds / t_ours:.2f}x (goal >= 3x)")
    print("ours by attribute:", dict(ours.most_common()))
    print("detect-secrets by type:", dict(ds.most_common()))
    print("ours by attribute and key (key None: bound to no name; top", a.top_keys, "keys each):")
    for attr, n in ours.most_common():
        keys = by_key[attr]
        rest = n - sum(k for _, k in keys.most_common(a.top_keys))
        shown = ", ".join(f"{k}={v}" for k, v in keys.most_common(a.top_keys))
        print(f"  {attr:<15} {n:5d}: {shown}" + (f", other keys={rest}" if rest else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
