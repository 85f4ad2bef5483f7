"""Stage ``library@RUN``: build the privacy feature library of the next round (paper Sec. 5).

    python -m stages.library RUN

Reads params: library (division, clustering, figures), taxonomy, experiment.library_from[RUN].library
(the run entry; its input library: prior YAML or data/library/<run>.json). Reads data/runs/RUN/
{confirmed,candidates,responses}.jsonl. Writes data/library/RUN.json (input library + new
templates/fragments of RUN with cluster and source run; raw values: data/ only),
data/library/RUN.divisions.jsonl (per-leak division with token scores),
data/library/RUN_stats.json (counts only) and reports/figures/RUN_division_scores.png,
RUN_embeddings_{fragments,templates}.png (no strings drawn).
"""

from __future__ import annotations

import sys

from testleak.config import load_params
from testleak.library import load_library
from testleak.library.clustering import get_encoder
from testleak.library.division import get_scorer
from testleak.library.figures import division_scores_figure, embedding_figure
from testleak.library.rounds import build_round, leak_instances
from testleak.paths import Paths
from testleak.stage import entry, run_argument
from testleak.records import read_jsonl, write_json, write_jsonl
from testleak.taxonomy import Taxonomy


class _Lazy:
    """Load the scorer / encoder only when there is something to score (model loads are slow)."""

    def __init__(self, factory, name="?"):
        self._f, self._o, self.name = factory, None, name

    def __getattr__(self, k):
        if self._o is None:
            self._o = self._f()
        return getattr(self._o, k)


def main(argv: list[str]) -> int:
    paths = Paths()
    params = load_params()
    run = run_argument(argv, params, "library", runs_key="library_from")
    lib_cfg = params["library"]
    src = params["experiment"]["library_from"][run].get("library") or "prior"
    base_path = paths.library(src) if "/" not in str(src) and not str(src).endswith((".json", ".yaml")) else paths.root / src
    base = load_library(base_path)
    tax = Taxonomy.from_config(params)
    from testleak.extract.core import response_text

    confirmed = read_jsonl(paths.confirmed(run), kind="confirmed")
    cands = {c["id"]: c for c in read_jsonl(paths.candidates(run))}
    resps = {r["id"]: r for r in read_jsonl(paths.responses(run))}
    div = lib_cfg["division"]
    inst, counts = leak_instances(confirmed, cands, resps, response_text, int(div.get("context_lines", 3)),
                                  int(div.get("max_chars", 240)))
    slots = {a.key: a.slot for a in tax.attributes.values()}
    others: dict = {}
    for c in confirmed:
        cand = cands.get(c.get("candidate_id")) or {}
        if c.get("status") == "confirmed" and cand.get("value"):
            others.setdefault(cand.get("response_id"), []).append((cand["value"], slots.get(cand["attribute"], "<VALUE>")))
    scorer = _Lazy(lambda: get_scorer(div, paths.models), div.get("scorer"))
    encoder = _Lazy(lambda: get_encoder(lib_cfg["clustering"], div.get("mlm_path")))
    doc, divisions, stats = build_round(inst, base, scorer, encoder, slots, div, lib_cfg["clustering"], run, others)
    doc["base"] = str(src)
    write_json(paths.library(run), doc)
    write_jsonl(paths.data / "library" / f"{run}.divisions.jsonl",
                [*divisions, *[{**i, "status": i["status"]} for i in inst if i["status"] != "ok"]], kind="library")
    pub = {k: v for k, v in stats.items() if not k.startswith("_")}
    pub["instances_by_status"] = dict(counts)
    write_json(paths.data / "library" / f"{run}_stats.json", pub)
    fig = paths.reports / "figures"
    division_scores_figure(divisions, fig / f"{run}_division_scores.png")
    proj = (lib_cfg.get("figures") or {}).get("projection", "pca")
    for kind in ("fragments", "templates"):
        cl = stats["_clusters"].get(kind) or {}
        items = cl.get("items") or []
        embedding_figure(cl.get("embeddings"), [i["attribute"] for i in items], fig / f"{run}_embeddings_{kind}.png",
                         f"{run}: {kind} (Λ{'frag' if kind == 'fragments' else 'tmp'}) by attribute", proj)
    print(f"library@{run}: {pub['divided']} divided; templates {pub.get('templates')}; fragments {pub.get('fragments')}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
