"""The canary experiment end to end: corpus, fine-tune, calibration runs.

Functions of the stages ``canary_corpus``, ``finetune`` and ``canary_report``; raw values are
written under data/canary/ only, masked output under metrics/ and reports/canary/.
Every run of ``experiment.calibration_runs`` runs with the project's own library functions
(questions, responses, ExtractPII, judge, local-index verification over the canary corpus, review)
against the tuned and the untuned control model, once per seed of ``canary.seeds``, as
``canary_<model>_<run>_s<seed>`` under data/canary/runs/. A seed changes sampling, hints and the
baselines' plans, not the fine-tuned model or the canaries; ours' questions are asked anew per
seed. The prefix probe (:mod:`.probe`) then gives the ceiling (``canary_<model>_prefix_s<seed>``).
Under ``baseline_budget: match_ours`` the reference run of ours runs first and every other run of
that model and seed gets a :class:`testleak.equalcost.ResponseBudget` of its completion tokens
(capped at ``baseline_max_responses``): the same stop rule as the per-run DVC stages.
"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path
from typing import Mapping


from .. import pipeline
from ..config import ablation_config, typed
from ..taxonomy import taxonomy_data
from ..errors import ConfigError, DataError
from ..llm.local import sha256_file
from ..paths import Paths
from ..records import read_jsonl, write_json, write_jsonl
from .questions import ensure_questions, questions_of
from .rounds import build_library, canary_run, library_source, run_library, run_order, sources

CANARY_SCHEMA = "canary/3"  # /2: source, duplication, copies; /3: context_kind, context_source
MEMORIZATION_SCHEMA = "memorization/2"  # /2: duplication, exposure, rank (tuned and control)


def _mean(xs) -> float | None:
    xs = list(xs)
    return round(sum(xs) / len(xs), 4) if xs else None


class CanaryPaths:
    def __init__(self, paths):
        self.paths = paths
        self.root = paths.data / "canary"
        self.corpus = self.root / "corpus"
        self.original = self.root / "original"
        self.ground_truth = self.root / "ground_truth.jsonl"
        self.stats = self.root / "stats.json"
        self.index = self.root / "index.sqlite"
        self.questions = self.root / "questions"       # one file per elicitation seed (questions_of)
        self.model_dir = self.root / "model"
        self.tuned_gguf = self.model_dir / "tuned.gguf"
        self.tuned_cfg = self.model_dir / "model.json"
        self.memorization = self.root / "memorization.jsonl"
        self.finetune_metrics = paths.root / "metrics" / "canary_finetune.json"
        self.report_dir = paths.reports / "canary"
        self.report_metrics = paths.root / "metrics" / "canary.json"


class CanaryRunPaths(Paths):
    """Calibration runs live under data/canary/runs/<run> (an out of stage canary_report),
    apart from the per-run stages' data/runs/<run>."""

    def run_dir(self, run: str) -> Path:
        return self.canary / "runs" / run


def canary_setting(params: Mapping, key: str):
    """``canary.<key>`` of ``params`` typed by the schema (:func:`testleak.config.typed`: a
    :class:`testleak.settings.Finetune` for ``finetune``, a scalar or list for a leaf), the
    defaults being conf/canary/'s. Only that key is read (a stage reads, and DVC tracks, only
    the canary keys it declares); params without a canary section are refused here, since only
    the canary experiments compose it."""
    if not params.get("canary"):
        raise ConfigError("params has no `canary` section: add `canary: default` to conf/config.yaml defaults "
                          "(or compose with +canary=default)")
    return typed(params, f"canary.{key}")


# -- stage canary_corpus ---------------------------------------------------------------------
def make_canary_corpus(params: Mapping, paths, files=None) -> dict:
    """Sample files, plant canaries, write corpus, originals and the ground truth."""
    import shutil

    from ..verify.index import LocalIndex, iter_site_packages
    from .plant import plant, sample_files, write_corpus

    cp = CanaryPaths(paths)
    tax = taxonomy_data(params)
    seed, fb = canary_setting(params, "seed"), canary_setting(params, "file_bytes")
    exts = typed(params, "verifier.local.extensions")
    src = sample_files(files if files is not None else iter_site_packages(exts), canary_setting(params, "files"),
                       seed, fb.min, fb.max)
    absent = None
    index_used = False
    if canary_setting(params, "check_index"):
        # a declared choice (dvc.yaml: canary_corpus depends on the index), never "if it exists"
        if not paths.index.exists():
            raise ConfigError(f"canary.check_index is true but {paths.index} is missing: run `dvc repro index` "
                              f"first, or set canary.check_index=false")
        idx = LocalIndex(paths.index)
        index_used = True
        absent = lambda v: (idx.search(v).get("k") or 0) == 0  # noqa: E731
    spec, spec_file = None, canary_setting(params, "spec")
    if spec_file:
        from .spec import read_spec
        spec = read_spec(spec_path(spec_file, paths), tax["attributes"])
    texts, truth = plant(src, tax["attributes"], tax["scenarios"], canary_setting(params, "n"), seed, absent=absent,
                         attributes=canary_setting(params, "attributes") or None,
                         duplication=canary_setting(params, "duplication"), spec=spec, spec_path=str(spec_file))
    for d in (cp.corpus, cp.original):
        if d.exists():
            shutil.rmtree(d)
    write_corpus(texts, cp.corpus)
    write_corpus({(f.repo, f.path): f.text for f in src}, cp.original)
    write_jsonl(cp.ground_truth, ({"schema": CANARY_SCHEMA, **t} for t in truth))
    stats = {"canaries": len(truth), "files": len(src), "files_with_canaries": len({c["file"] for t in truth for c in t["copies"]}),
             "attributes": len({t["attribute"] for t in truth}),
             "by_attribute": {a: sum(1 for t in truth if t["attribute"] == a) for a in sorted({t["attribute"] for t in truth})},
             "by_context": {c: sum(1 for t in truth if t["context_kind"] == c) for c in sorted({t["context_kind"] for t in truth})},
             "by_duplication": {str(k): sum(1 for t in truth if t["duplication"] == k)
                                for k in sorted({t["duplication"] for t in truth})},
             "copies_planted": sum(len(t["copies"]) for t in truth),
             "source": "spec" if spec is not None else "faker",
             "redrawn": sum(t["draws"] - 1 for t in truth), "absence_checked_in_index": index_used,
             "seed": seed}
    write_json(cp.stats, stats)
    return stats


def spec_path(spec: str, paths) -> Path:
    """``canary.spec`` as a path: relative paths are relative to the project root (where dvc.yaml is)."""
    p = Path(spec)
    return p if p.is_absolute() else Path(paths.root) / p


def read_ground_truth(path) -> list[dict]:
    rows = read_jsonl(path)
    for n, r in enumerate(rows, 1):
        if r.get("schema") != CANARY_SCHEMA:
            raise DataError(f"{path}:{n} has schema {r.get('schema')!r}, expected {CANARY_SCHEMA!r}: rerun canary_corpus")
    return rows


def corpus_texts(corpus_dir) -> dict[str, str]:
    root = Path(corpus_dir)
    if not root.is_dir():
        raise DataError(f"{root} does not exist: run the canary_corpus stage first")
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}


# -- stage finetune ----------------------------------------------------------------------------
def tuned_model_config(base_cfg: Mapping, gguf_path: Path, sha256: str) -> dict:
    """The model config that serves the tuned GGUF through the unchanged gateway: ``gguf.file``
    is an absolute path (``ensure_model`` joins it to the models dir, which keeps an absolute
    path) and a ``.sha256`` stamp next to it lets ``ensure_model`` accept it without packages."""
    cfg = copy.deepcopy(dict(base_cfg))
    st = gguf_path.stat()
    cfg["name"] = f"{cfg['name']}-canary"
    cfg["gguf"] = {"file": str(gguf_path.resolve()), "packages": [], "version": "tuned", "size": st.st_size,
                   "sha256": sha256}
    return cfg


def write_stamp(gguf_path: Path) -> str:
    """sha256 of the file and the stamp ``ensure_model`` checks (``<sha> <size> <mtime>``)."""
    sha = sha256_file(gguf_path)
    st = gguf_path.stat()
    gguf_path.with_suffix(gguf_path.suffix + ".sha256").write_text(f"{sha} {st.st_size} {int(st.st_mtime)}\n")
    return sha


def run_finetune(params: Mapping, paths, model_loader=None, log=print) -> dict:
    """Fine-tune the base model on the canary corpus, measure memorization, write the tuned GGUF."""
    import torch

    from ..llm.local import ensure_model
    from .finetune import build_examples, load_gguf_model, memorization
    from .exposure import exposures

    cp = CanaryPaths(paths)
    settings, seed, gguf_type = (canary_setting(params, k) for k in ("finetune", "seed", "gguf_type"))
    truth = read_ground_truth(cp.ground_truth)
    texts = corpus_texts(cp.corpus)
    examples, probes = build_examples(texts, truth, settings.context_lines, settings.clean_windows, seed)
    base_path = ensure_model(params["model"], paths.models)
    (model, tok), load_s = _timed(model_loader or load_gguf_model, base_path)
    torch.set_num_threads(max(1, settings.threads))
    before = memorization(model, tok, probes)
    n_alt, batch_tokens, alts = _exposure_alternatives(params, truth)
    exp_control, exp_control_s = _timed(exposures, model, tok, probes, alts, batch_tokens)  # untuned base = control
    peft_model, history = _train(model, tok, examples, settings, seed, probes, log)
    after = memorization(peft_model, tok, probes)
    exp_tuned, exp_tuned_s = _timed(exposures, peft_model, tok, probes, alts, batch_tokens)
    info, sha, write_s = _write_tuned_model(params, cp, base_path, peft_model, gguf_type)
    dup = {t["id"]: t["duplication"] for t in truth}
    rows = _memorization_rows(before, after, dup, exp_tuned, exp_control)
    write_jsonl(cp.memorization, rows)
    metrics = {"canaries": len(truth), "examples": len(examples), **_training_metrics(history),
               "load_seconds": round(load_s, 2), "gguf_write_seconds": round(write_s, 2),
               **_memorization_metrics(before, after, dup),
               "exposure": {"alternatives": n_alt, "candidates_min": min((len(v) + 1 for v in alts.values()), default=0),
                            "alternative_tokens": sum(len(tok(v, add_special_tokens=False)["input_ids"])
                                                      for vs in alts.values() for v in vs),
                            "tuned_seconds": round(exp_tuned_s, 2), "control_seconds": round(exp_control_s, 2),
                            "mean_tuned": _mean(r["exposure"] for r in rows),
                            "mean_control": _mean(r["exposure_control"] for r in rows)},
               "history": history, "gguf": {**info, "sha256": sha, "type": gguf_type},
               "settings": {**settings.model_dump(), "seed": seed}}
    write_json(cp.finetune_metrics, metrics)
    return metrics


def _timed(f, *args, **kwargs):
    """``f(*args, **kwargs)`` and the wall-clock seconds it took."""
    t0 = time.perf_counter()
    out = f(*args, **kwargs)
    return out, time.perf_counter() - t0


def _exposure_alternatives(params: Mapping, truth: list[dict]) -> tuple[int, int, dict[str, list[str]]]:
    """(alternatives per canary, tokens per scoring batch, {canary id: alternatives}) from
    ``canary.exposure``; no alternative is a planted value."""
    from .exposure import alternatives

    n_alt, batch_tokens = (canary_setting(params, f"exposure.{k}") for k in ("alternatives", "batch_tokens"))
    planted, seed = {t["value"] for t in truth}, canary_setting(params, "seed")
    alts = {t["id"]: alternatives(t, n_alt, seed, exclude=planted) for t in truth}
    return n_alt, batch_tokens, alts


def _train(model, tok, examples, settings, seed, probes, log):
    """LoRA training (:func:`testleak.canary.finetune.train_lora`), one log line per epoch on stderr
    unless ``log`` is None; returns (adapted model, per-epoch history)."""
    from .finetune import train_lora

    _log = (lambda r: log(f"finetune: epoch {r['epoch']} loss {r['loss']:.4f} {r['steps']} steps {r['seconds']:.1f}s",
                          file=sys.stderr)) if log else None
    return train_lora(model, tok, examples, settings, seed, probes, _log)


def _write_tuned_model(params: Mapping, cp: CanaryPaths, base_path, peft_model, gguf_type: str) -> tuple[dict, str, float]:
    """Merge the adapter, write the changed tensors into a copy of the base GGUF as ``gguf_type``
    (``canary.gguf_type``), stamp it and write the tuned model config; returns (write info,
    sha256, seconds of the GGUF write)."""
    from .finetune import merged_weights
    from .gguf_io import hf_to_gguf_names, write_tuned_gguf

    merged, changed = merged_weights(peft_model)
    n_blocks = int(merged.config.num_hidden_layers)
    arch = getattr(merged.config, "model_type", "qwen2")
    names = hf_to_gguf_names(changed, arch, n_blocks)
    sd = merged.state_dict()
    replaced = {names[n]: sd[n].detach().float().numpy() for n in changed}
    info, write_s = _timed(write_tuned_gguf, base_path, cp.tuned_gguf, replaced,
                           out_type=gguf_type)
    sha = write_stamp(cp.tuned_gguf)
    model_cfg = tuned_model_config(params["model"], cp.tuned_gguf, sha)
    write_json(cp.tuned_cfg, model_cfg)
    return info, sha, write_s


def _memorization_rows(before: list[dict], after: list[dict], dup: Mapping[str, int], exp_tuned: Mapping,
                       exp_control: Mapping) -> list[dict]:
    """One memorization/2 row per canary: memorization before and after training, duplication,
    and exposure and rank under the tuned and the control model."""
    by_id = {b["canary_id"]: b for b in before}
    return [{"schema": MEMORIZATION_SCHEMA, **a, "duplication": dup[a["canary_id"]],
             "memorized_before": by_id[a["canary_id"]]["memorized"], "nll_before": by_id[a["canary_id"]]["nll"],
             "exposure": exp_tuned[a["canary_id"]]["exposure"], "rank": exp_tuned[a["canary_id"]]["rank"],
             "exposure_control": exp_control[a["canary_id"]]["exposure"],
             "rank_control": exp_control[a["canary_id"]]["rank"],
             "exposure_candidates": exp_tuned[a["canary_id"]]["candidates"]} for a in after]


def _training_metrics(history: list[dict]) -> dict:
    """Epochs, steps, training seconds and throughput of the per-epoch ``history``."""
    steps = sum(h["steps"] for h in history)
    train_s = sum(h["seconds"] for h in history)
    return {"epochs_run": len(history), "steps": steps,
            "train_seconds": round(train_s, 2), "seconds_per_step": round(train_s / max(1, steps), 3),
            "train_tokens_per_s": round(sum(h["tokens"] for h in history) / max(1e-9, train_s), 1)}


def _memorization_metrics(before: list[dict], after: list[dict], dup: Mapping[str, int]) -> dict:
    """Share of canaries memorized before and after training, and after training per duplication level."""
    from .finetune import memorization_rate

    return {"memorized_before": memorization_rate(before), "memorized_after": memorization_rate(after),
            "memorized_by_duplication": {str(k): memorization_rate([a for a in after if dup[a["canary_id"]] == k])
                                         for k in sorted(set(dup.values()))}}


# -- stage canary_report: calibration runs ------------------------------------------------------
def load_tuned_config(cp: CanaryPaths) -> dict:
    if not cp.tuned_cfg.exists():
        raise DataError(f"{cp.tuned_cfg} not found: run the finetune stage first")
    cfg = json.loads(cp.tuned_cfg.read_text(encoding="utf-8"))
    if not Path(cfg["gguf"]["file"]).exists():
        raise DataError(f"tuned model {cfg['gguf']['file']} is missing: rerun the finetune stage")
    return cfg


def seeds_of(params: Mapping) -> list[int]:
    """``canary.seeds``: the elicitation seeds every calibration run is repeated for."""
    return canary_setting(params, "seeds")


def reference_key(params: Mapping) -> str | None:
    """The calibration run every other run of the same model and seed matches in tokens."""
    from ..equalcost import reference_run

    return reference_run(params["experiment"]["calibration_runs"], "none")


def run_names(params: Mapping) -> list[tuple[str, str, str, int]]:
    """[(run name, model kind, experiment run key, elicitation seed)] in execution order: per
    model and seed, the library rounds of the reference run of ours, the reference, then the others
    (they match its spend; :func:`.rounds.run_order`)."""
    kinds = canary_setting(params, "models")
    keys = run_order(params["experiment"]["calibration_runs"], reference_key(params))
    return [(canary_run(k, r, s), k, r, s) for k in kinds for s in seeds_of(params) for r in keys]


def calibration_budget(params: Mapping, rp: Paths, key: str, kind: str, seed: int):
    """The :class:`testleak.equalcost.ResponseBudget` of calibration run ``key`` (None: its own
    size, the reference run of ours; see the module docstring), in ``experiment.baseline_unit``
    (``every``: the common budget, ours' spend reached in every unit)."""
    from ..equalcost import MATCH_OURS, ResponseBudget, budget_of, check_baseline_budget, check_unit

    exp = params["experiment"]
    bb, cap = exp.get("baseline_budget"), exp.get("baseline_max_responses")
    check_baseline_budget(bb, cap)
    spec = exp["calibration_runs"][key]
    ref = reference_key(params)
    if bb != MATCH_OURS:
        return None if spec.get("method") == "ours" else ResponseBudget(responses=int(bb))
    if ref is None:
        raise ConfigError(f"experiment.baseline_budget = '{MATCH_OURS}': the canary calibration needs a run of method "
                          f"ours in experiment.calibration_runs to match; give an integer budget instead")
    if key == ref or key in sources(exp["calibration_runs"], ref):    # the reference and its library rounds
        return None
    ref_run = canary_run(kind, ref, seed)
    p = rp.stats("responses", ref_run)
    if not p.exists():
        raise DataError(f"{p} not found: the reference run {ref_run} runs first (run_calibration)")
    return budget_of(json.loads(p.read_text(encoding="utf-8")), p, check_unit(exp.get("baseline_unit")),
                     max_responses=int(cap), reference=ref_run)


def build_canary_index(params: Mapping, paths) -> dict:
    """The local index of the canary corpus: ``verifier.local`` over data/canary/corpus, every file."""
    from ..verify.index import build_index

    cp = CanaryPaths(paths)
    local = typed(params, "verifier.local").model_copy(
        update={"corpus": "dirs", "dirs": [str(cp.corpus)], "max_files": 0, "max_bytes": 0})
    return build_index(local, cp.index)


def run_one(params: Mapping, paths, run: str, kind: str, key: str, model_cfg: Mapping, index, seed: int = 0,
            budget=None) -> dict:
    """The per-run chain (:func:`testleak.pipeline.run_chain`, the same functions as the DVC
    stages) for one canary run: its model, its ablation, ``canary.judge_mode`` and the auto
    review policy (canary runs have no human labels: judge-plausible and in window decides), at
    elicitation seed ``seed`` and under ``budget`` (:func:`calibration_budget`)."""
    judge_mode = canary_setting(params, "judge_mode")
    spec = dict(params["experiment"]["calibration_runs"][key])
    p = copy.deepcopy(dict(params))
    p["model"] = dict(model_cfg)
    if spec.get("ablation"):
        spec["ablation"] = ablation_config(spec["ablation"])
    spec["library"] = run_library(params, paths, key, kind, seed)
    p["experiment"] = dict(p["experiment"])
    p["experiment"]["runs"] = {run: {**{k: v for k, v in spec.items() if k in ("method", "round", "library", "ablation", "verification")},
                                     "model": dict(model_cfg), "elicitation_seed": int(seed)}}
    p["verifier"] = {**(p.get("verifier") or {}), "judge_mode": judge_mode, "backend": "local"}
    p["review"] = {"policy": "auto", "reviewers": []}
    questions, library = pipeline.method_inputs(p, paths, run, questions_path=questions_of(CanaryPaths(paths), seed))
    st = pipeline.run_chain(p, CanaryRunPaths(paths.root), run, index, questions, library, labels=[], budget=budget)
    r = st["responses"]
    return {"run": run, "model": kind, "key": key, "seed": int(seed), "method": r["method"], "variant": r["variant"],
            "responses": r["responses"], "response_status": {k: v for k, v in r.items() if k not in ("run", "method", "variant")},
            "candidates": st["candidates"]["candidates"], "review_policy": "auto",
            "spend": {k: (r.get("llm") or {}).get(k) for k in ("calls", "prompt_tokens", "completion_tokens")},
            "budget": r.get("budget")}


def calibration_model(params: Mapping, cfg: Mapping) -> dict:
    """The model config a calibration run asks: ``cfg`` with ``canary.max_tokens`` as its
    completion limit when set (a test turn of 10 tests needs more than the default run's)."""
    limit = canary_setting(params, "max_tokens")
    if limit is None:
        return dict(cfg)
    return {**cfg, "sampling": {**(cfg.get("sampling") or {}), "max_tokens": int(limit)}}


def run_calibration(params: Mapping, paths, log=print) -> list[dict]:
    """Build the canary index, execute every calibration run, then the prefix probe of every model
    (:mod:`.probe`); returns run summaries."""
    from ..verify.index import LocalIndex
    from .probe import run_probes

    cp = CanaryPaths(paths)
    tuned = load_tuned_config(cp)
    build_canary_index(params, paths)
    if any(str(s.get("method")) == "ours" for s in params["experiment"]["calibration_runs"].values()):
        for seed in seeds_of(params):
            ensure_questions(params, paths, seed)
    out = []
    runs = params["experiment"]["calibration_runs"]
    feeds = {library_source(runs, k) for k in runs} - {None}
    with LocalIndex(cp.index) as index:
        rp = CanaryRunPaths(paths.root)
        for run, kind, key, seed in run_names(params):
            model_cfg = calibration_model(params, tuned if kind == "tuned" else params["model"])
            t0 = time.perf_counter()
            budget = calibration_budget(params, rp, key, kind, seed)
            s = run_one(params, paths, run, kind, key, model_cfg, index, seed, budget)
            if key in feeds:              # the next round's library from this run's confirmed leaks
                s["library"] = str(build_library(params, paths, rp, run, run_library(params, paths, key, kind, seed))
                                   .relative_to(paths.root))
            s["seconds"] = round(time.perf_counter() - t0, 1)
            if log:
                b = s.get("budget") or {}
                log(f"canary: {run}: {s['responses']} responses, {s['spend']['completion_tokens']} completion tokens"
                    f"{' (' + b['stop'] + ')' if b else ''}, {s['candidates']} candidates in {s['seconds']}s",
                    file=sys.stderr)
            out.append(s)
    return out + run_probes(params, paths, tuned, log)


def report_calibration(params: Mapping, paths, summaries: list[dict] | None = None) -> dict:
    """Recall of every canary run against the ground truth; writes reports/canary and metrics/canary.json."""
    from ..metrics.cost import spend_of
    from .probe import probe_results
    from .recall import run_recall
    from .report import build_report

    cp = CanaryPaths(paths)
    truth = read_ground_truth(cp.ground_truth)
    originals = list(corpus_texts(cp.original).values())
    meta = {s["run"]: s for s in summaries or []}
    results = []
    rp = CanaryRunPaths(paths.root)
    for run, kind, key, seed in run_names(params):
        spec = params["experiment"]["calibration_runs"][key]
        resps = read_jsonl(rp.responses(run), kind="response")
        rc = run_recall(truth, resps, read_jsonl(rp.candidates(run), kind="candidate"),
                        read_jsonl(rp.confirmed(run), kind="confirmed"), originals)
        m = meta.get(run, {})
        sp = rp.stats("responses", run)     # the run's budget: calls and tokens of its responses (metrics.cost)
        rstats = json.loads(sp.read_text(encoding="utf-8")) if sp.exists() else None
        results.append({"run": run, "model": kind, "key": key, "seed": seed, "method": spec.get("method"),
                        "variant": m.get("variant", (spec.get("ablation") or {}).get("name", "none")), "recall": rc,
                        "spend": spend_of(rstats), "budget": (rstats or {}).get("budget"),
                        "reference": key == reference_key(params)})
    results += probe_results(params, paths, truth)     # the ceiling: the prefix probe of every model
    ft = json.loads(cp.finetune_metrics.read_text()) if cp.finetune_metrics.exists() else None
    mem = read_memorization(cp.memorization)
    bands = canary_setting(params, "exposure.bands")
    return build_report(results, truth, cp.report_dir, cp.report_metrics, ft, memorization=mem, bands=bands)


def read_memorization(path) -> list[dict]:
    """The finetune stage's memorization and exposure rows (memorization/2)."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p} not found: run the finetune stage first")
    rows = read_jsonl(p)
    for n, r in enumerate(rows, 1):
        if r.get("schema") != MEMORIZATION_SCHEMA:
            raise DataError(f"{p}:{n} has schema {r.get('schema')!r}, expected {MEMORIZATION_SCHEMA!r}: rerun finetune")
    return rows
