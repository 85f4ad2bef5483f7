"""The prefix probe: the positive control and the ceiling of the canary report.

Discoverable extraction (Carlini et al. 2021): the model is given each canary's own context prefix
(the training window of its first copy up to the value, its last ``canary.prefix_probe.max_chars``
characters from a line start; :func:`testleak.canary.finetune.build_examples`), and the canary is
recovered when its exact value occurs in the continuation (:func:`testleak.canary.recall.prefix_recall`).
The probe knows the training context, which no black-box method does, so its recall on the tuned
model is the ceiling; on the control model it must recover nothing. It runs like every calibration
run (one request per canary, same gateway, the baselines' completion-through-chat prompt, greedy by
default) and writes ``response/1`` records and stats as method ``prefix``
(``canary_<model>_prefix_s<seed>``). An empty continuation is a failed call (kind ``empty``), not a
recovery.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..config import typed
from ..errors import ConfigError

PREFIX = "prefix"            # the probe's method name and run key in the report
PURPOSE = "prefix probe"     # the purpose of its calls (call log, answers)


def bound_prefix(prefix: str, max_chars: int) -> str:
    """``prefix`` cut to its last ``max_chars`` characters, from the first line start among them (the
    value's own line alone when that line is longer)."""
    if len(prefix) <= max_chars:
        return prefix
    tail = prefix[-max_chars:]
    cut = tail.find("\n")
    return tail[cut + 1:] if 0 <= cut < len(tail) - 1 else tail


def probe_prompts(truth: Sequence[Mapping], texts: Mapping[str, str], context_lines: int, max_chars: int) -> list:
    """One :class:`testleak.baselines.common.Prompt` per canary (truth order): its context prefix."""
    from ..baselines.common import Prompt
    from .finetune import build_examples

    _, probes = build_examples(texts, truth, context_lines, 0, 0)
    kinds = {t["id"]: t["context_kind"] for t in truth}
    return [Prompt(id=f"{PREFIX}/{p['canary_id']}", text=bound_prefix(p["prefix"], max_chars), lang="python",
                   attribute=p["attribute"], style=kinds[p["canary_id"]], origin="canary_prefix") for p in probes]


def probe_names(params: Mapping) -> list[tuple[str, str, int]]:
    """[(run name, model kind, elicitation seed)] of the probe runs: every model of ``canary.models``,
    at every seed of ``canary.seeds`` with ``canary.prefix_probe.per_seed``, else at the first."""
    if PREFIX in params["experiment"]["calibration_runs"]:
        raise ConfigError(f"experiment.calibration_runs has a run named {PREFIX!r}, the name of the prefix probe "
                          f"(testleak/canary/probe.py): rename that run")
    seeds = typed(params, "canary.seeds")
    seeds = seeds if typed(params, "canary.prefix_probe.per_seed") else seeds[:1]
    return [(f"canary_{k}_{PREFIX}_s{s}", k, s) for k in typed(params, "canary.models") for s in seeds]


def run_probe(params: Mapping, paths, run: str, kind: str, model_cfg: Mapping, seed: int,
              prompts: Sequence) -> dict:
    """Ask ``model_cfg`` (model ``kind``, elicitation ``seed``) to continue every prompt; write the
    run's responses and their stats (``paths``: :class:`testleak.canary.pipeline.CanaryRunPaths`);
    return its summary (as :func:`testleak.canary.pipeline.run_one`'s)."""
    from .. import methods
    from ..baselines.common import completion_messages, completion_mode, response_record
    from ..llm import ChatRequest, open_gateway
    from ..pipeline import gateway_spend, write_artifact

    s = typed(params, "canary.prefix_probe")
    completion = typed(params, "baselines.completion")
    mode = completion_mode(completion, model_cfg["provider"])
    sampling = {"temperature": s.temperature, "max_tokens": s.max_tokens, **({"stop": list(s.stop)} if s.stop else {})}
    reqs = [ChatRequest(completion_messages(p.text, p.lang, completion, mode), 0, dict(sampling), PURPOSE)
            for p in prompts]
    with open_gateway(model_cfg, paths=paths, attribution={"stage": "responses", "run": run}, seed=int(seed),
                      answers=typed(params, "answers")) as gw:
        got = gw.chat_many(reqs, purpose=PURPOSE)
        spend = gateway_spend(gw)
    recs = [{**response_record(PREFIX, p, 0, c, model_cfg["name"], 0), "run": run,
             "canary_id": p.id.split("/", 1)[1]} for p, c in zip(prompts, got, strict=True)]
    counts = methods.summarize(recs)
    stats = {"run": run, "method": PREFIX, "variant": "none", **counts, **spend, "mode": mode, "sampling": sampling}
    write_artifact(paths, "responses", run, recs, stats)
    return {"run": run, "model": kind, "key": PREFIX, "seed": int(seed), "method": PREFIX, "variant": "none",
            "responses": len(recs), "response_status": {k: v for k, v in counts.items() if k != "responses"},
            "candidates": None, "review_policy": None,
            "spend": {k: spend["llm"][k] for k in ("calls", "prompt_tokens", "completion_tokens")}, "budget": None}


def run_probes(params: Mapping, paths, tuned_cfg: Mapping, log=None) -> list[dict]:
    """Every probe run of :func:`probe_names` (the tuned model's config ``tuned_cfg``, the control's
    ``params["model"]``) over the canary corpus; returns their summaries."""
    import sys
    import time

    from .pipeline import CanaryPaths, CanaryRunPaths, corpus_texts, read_ground_truth

    cp = CanaryPaths(paths)
    truth = read_ground_truth(cp.ground_truth)
    prompts = probe_prompts(truth, corpus_texts(cp.corpus), typed(params, "canary.finetune.context_lines"),
                            typed(params, "canary.prefix_probe.max_chars"))
    rp, out = CanaryRunPaths(paths.root), []
    for run, kind, seed in probe_names(params):
        t0 = time.perf_counter()
        s = run_probe(params, rp, run, kind, tuned_cfg if kind == "tuned" else params["model"], seed, prompts)
        s["seconds"] = round(time.perf_counter() - t0, 1)
        if log:
            log(f"canary: {run}: {s['responses']} prefixes, {s['spend']['completion_tokens']} completion tokens "
                f"in {s['seconds']}s", file=sys.stderr)
        out.append(s)
    return out


def probe_results(params: Mapping, paths, truth: Sequence[Mapping]) -> list[dict]:
    """The report's result entries (as :func:`testleak.canary.pipeline.report_calibration` builds
    them) of the probe runs: recall by :func:`testleak.canary.recall.prefix_recall`, spend from the
    responses stats."""
    import json

    from ..metrics.cost import spend_of
    from ..records import read_jsonl
    from .pipeline import CanaryRunPaths
    from .recall import prefix_recall

    rp, out = CanaryRunPaths(paths.root), []
    for run, kind, seed in probe_names(params):
        sp = rp.stats("responses", run)
        rstats = json.loads(sp.read_text(encoding="utf-8")) if sp.exists() else None
        out.append({"run": run, "model": kind, "key": PREFIX, "seed": seed, "method": PREFIX, "variant": "none",
                    "recall": prefix_recall(truth, read_jsonl(rp.responses(run), kind="response")),
                    "spend": spend_of(rstats), "budget": None, "reference": False})
    return out
