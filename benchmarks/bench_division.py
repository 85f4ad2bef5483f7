"""Which division scorer recovers the value span? Measured on the prior library (paper Sec. 5.2).

    .venv/bin/python benchmarks/bench_division.py [--per-template 2] [--scorers gemma3-270m,qwen2.5-coder-0.5b,mlm-random]

Data: every template of ``testleak/resources/prior_library.yaml`` with its slots filled by
fragments of the slot's attribute (template i of an attribute takes fragments 2i, 2i+1, ...
cyclically; other attributes' slots take their first fragment), so the value spans are known.
Every filled slot is a value: the true fragment characters are the union of the filled spans.
All scorers score the same instances in one run, after the same left context per language
(as the stage does with preceding source lines).

Each scorer's token scores go through the paper's rule unchanged (``divide(..., policy="score")``:
tokens above the instance's lower quartile are fragment, maximal runs trimmed of quotes and
whitespace). Figures, micro-averaged over characters (per attribute and overall):
precision / recall / F1 / IoU of the predicted fragment characters against the true value
characters; ``tmpl_exact`` = share of instances whose abstract template equals the true one;
``auc`` = mean per-instance ROC-AUC of value tokens vs other tokens (threshold-free: 0.5 is
chance), which says whether a scorer separates value from template at all.

Scorers: ``causal_surprisal`` under each GGUF of the scorer models (``library.division.models_file``) (Gemma 3 270M
base: another family than the Qwen models under test; Qwen2.5-Coder-0.5B: the model under
test itself, listed as a reference that must not be the default), ``fim_pll`` of the Qwen
model when asked (``--scorers qwen2.5-coder-0.5b:fim``, n rows per instance), and the
masked-LM path (``mlm_pll``) on the only masked LM available offline: a randomly initialised
2-layer BERT on the MiniLM WordPiece vocabulary (``mlm-random``): a floor, not CodeBERT.
"""

from __future__ import annotations

import argparse
import re
import resource
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from testleak.config import compose_dict
from testleak.library import load_library
from testleak.library.division import MaskedLMScorer, divide, get_scorer
from testleak.paths import Paths
from testleak.taxonomy import taxonomy_data

PREFIX = {  # left context per template language (not scored), like the stage's preceding lines
    "python": "def test_fixture():\n", "javascript": "test('fixture', () => {\n", "java": "void testFixture() {\n",
    "json": "{\n", "yaml": "fixture:\n", "sql": "-- seed data\n", "text": "",
}
SLOT = re.compile(r"<[A-Z_]+>")


def instances(library: dict, slots: dict[str, str], per_template: int) -> list[dict]:
    """Filled templates with their true value spans (see module doc)."""
    attr_of = {s: a for a, s in slots.items()}
    out = []
    for attr, body in library.items():
        frags = [f["text"] for f in body["fragments"]]
        for i, tmpl in enumerate(body["templates"]):
            for k in range(per_template):
                own = iter(frags[(per_template * i + k + j) % len(frags)] for j in range(len(frags) * 4))
                text, spans, last = "", [], 0
                for m in SLOT.finditer(tmpl["text"]):
                    other = attr_of.get(m.group())
                    value = next(own) if other == attr else library[other]["fragments"][0]["text"]
                    text += tmpl["text"][last:m.start()]
                    spans.append((len(text), len(text) + len(value)))
                    text += value
                    last = m.end()
                text += tmpl["text"][last:]
                out.append({"attribute": attr, "lang": tmpl["lang"], "text": text, "spans": spans,
                            "template": tmpl["text"], "slot": slots[attr]})
    return out


def random_mlm(directory: Path):
    """The masked-LM path's only offline model: a random 2-layer BERT on MiniLM's WordPiece vocabulary."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer, BertConfig

    from testleak.library.clustering import minilm_dir

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(minilm_dir())
    cfg = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=256)
    AutoModelForMaskedLM.from_config(cfg).save_pretrained(directory)
    tok.save_pretrained(directory)
    return MaskedLMScorer.from_path(directory, batch_size=64)


def _auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def evaluate(insts: list[dict], scored, quantile: float) -> dict[str, dict]:
    """Per attribute and overall: char-level P/R/F1/IoU of the Q1 rule's fragments, template match, AUC."""
    acc: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for inst, ts in zip(insts, scored):
        d = divide(ts, "\0", quantile, None, "score")
        true = set().union(*(range(a, b) for a, b in inst["spans"]))
        pred = set().union(*(range(f["start"], f["end"]) for f in d.fragments)) if d.fragments else set()
        want = SLOT.sub("\0", inst["template"])
        val = [s for (a, b), s in zip(ts.spans, ts.scores) if any(a < vb and b > va for va, vb in inst["spans"])]
        oth = [s for (a, b), s in zip(ts.spans, ts.scores) if not any(a < vb and b > va for va, vb in inst["spans"])]
        for key in (inst["attribute"], "ALL"):
            c = acc[key]
            c["tp"] += len(pred & true)
            c["pred"] += len(pred)
            c["true"] += len(true)
            c["union"] += len(pred | true)
            c["n"] += 1
            c["exact"] += d.template == want
            auc = _auc(val, oth)
            if auc == auc:
                c["auc"] += auc
                c["n_auc"] += 1
    res = {}
    for key, c in acc.items():
        p = c["tp"] / c["pred"] if c["pred"] else 0.0
        r = c["tp"] / c["true"] if c["true"] else 0.0
        res[key] = {"n": int(c["n"]), "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0,
                    "iou": c["tp"] / c["union"] if c["union"] else 0.0, "tmpl_exact": c["exact"] / c["n"],
                    "auc": c["auc"] / c["n_auc"] if c["n_auc"] else float("nan")}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-template", type=int, default=2, help="filled instances per prior template")
    ap.add_argument("--scorers", default="gemma3-270m,qwen2.5-coder-0.5b,mlm-random",
                    help="comma list: a key of the scorer models, library.division.models_file (causal_surprisal), KEY:fim (fim_pll), mlm-random")
    a = ap.parse_args()
    cfg = compose_dict()
    div, tax = cfg["library"]["division"], taxonomy_data(cfg)
    slots = {k: v["slot"] for k, v in tax["attributes"].items()}
    insts = instances(load_library(Paths().root / cfg["library"]["prior"]), slots, a.per_template)
    texts, prefixes = [i["text"] for i in insts], [PREFIX.get(i["lang"], "") for i in insts]
    print(f"{len(insts)} instances from the prior library, {len(slots)} attributes, quantile {div['quantile']}",
          flush=True)
    tables, info = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.scorers.split(","):
            t = time.perf_counter()
            if name == "mlm-random":
                scorer = random_mlm(Path(tmp) / "mlm")
            else:
                model, _, how = name.partition(":")
                scorer = get_scorer({**div, "model": model, "scorer": "fim_pll" if how == "fim" else "causal_surprisal"},
                                    Paths().models)
            load = time.perf_counter() - t
            t = time.perf_counter()
            scored = scorer.score(texts, prefixes)
            info[name] = (scorer.name, load, time.perf_counter() - t, sum(s.rows for s in scored))
            tables[name] = evaluate(insts, scored, float(div["quantile"]))
            r = tables[name]["ALL"]
            print(f"{name}: scored in {info[name][2]:.0f} s, F1 {r['f1']:.3f}, AUC {r['auc']:.3f}", flush=True)
    print("\n| scorer | method | load s | score s | rows | precision | recall | F1 | IoU | template exact | AUC |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, tab in tables.items():
        m, load, sec, rows = info[name]
        r = tab["ALL"]
        print(f"| {name} | {m} | {load:.0f} | {sec:.0f} | {rows} | {r['precision']:.3f} | {r['recall']:.3f} | "
              f"{r['f1']:.3f} | {r['iou']:.3f} | {r['tmpl_exact']:.3f} | {r['auc']:.3f} |")
    print("\nF1 (AUC) per attribute:\n")
    names = list(tables)
    print("| attribute | n | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for attr in sorted(k for k in tables[names[0]] if k != "ALL"):
        cells = [f"{tables[n][attr]['f1']:.2f} ({tables[n][attr]['auc']:.2f})" for n in names]
        print(f"| {attr} | {tables[names[0]][attr]['n']} | " + " | ".join(cells) + " |")
    print(f"\npeak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
