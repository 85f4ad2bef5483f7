"""Stage ``responses@RUN``: the test LLM's answers for one run (paper Sec. 4.2, Fig. 7).

    python -m stages.responses RUN

Method ``ours``: questions (data/questions/questions.jsonl, or generic tasks when
``ablation.scenario_questions`` is false) -> code turn -> G(c) -> test turn with library
hints (library of the run: ``prior`` or a previous run's data/library/<run>.json).
Methods ``codexleaks`` / ``codebreaker``: ``testleak.baselines.run_baseline``.

Writes data/runs/RUN/responses.jsonl (response/1).  Records are appended and flushed
batch by batch to responses.jsonl.partial, renamed at the end; the gateway cache makes a
rerun after an interruption repeat no call.  Prints counts by status (no raw values).
"""

from __future__ import annotations

import json
import os
import sys

from testleak.config import load_params
from testleak.elicit import ElicitSettings, elicit, questions_for_run, run_baseline_method, summarize
from testleak.llm import open_gateway
from testleak.paths import Paths
from testleak.stage import entry, run_argument
from testleak.records import read_jsonl, tag
from testleak.taxonomy import Taxonomy


def main(argv: list[str]) -> int:
    paths = Paths()
    params = load_params()
    run = run_argument(argv, params, "responses")
    tax = Taxonomy.from_config(params)
    settings = ElicitSettings.from_params(params, run)
    exp = params["experiment"]
    out = paths.responses(run)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    counts = {}
    with open_gateway(params["model"], paths=paths) as gw, partial.open("w", encoding="utf-8") as f:
        if settings.method == "ours":
            questions = read_jsonl(paths.questions, kind="question") if settings.scenario_questions else None
            qs = questions_for_run(settings, questions, tax, exp["scenarios"], int(exp["questions_per_scenario"]))
            library = None
            if settings.library_hints:
                from testleak.library import load_library

                library = load_library(paths.library(settings.library))
            records = elicit(qs, settings, tax, gw, library)
        else:
            records = run_baseline_method(params, settings, tax, gw)
        seen = []
        for r in records:
            f.write(json.dumps(tag("response", r), ensure_ascii=False) + "\n")
            f.flush()
            seen.append({"status": r.get("status")})
        counts = summarize(seen)
    os.replace(partial, out)
    print(f"responses {run}: " + ", ".join(f"{k}={v}" for k, v in counts.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
