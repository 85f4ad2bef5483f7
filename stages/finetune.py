"""Stage ``finetune``: LoRA fine-tune of the base model on the canary corpus (issue 8; testleak.canary.finetune).

    python -m stages.finetune

Reads params: model (base GGUF), canary (seed, finetune.*, gguf_type, exposure.alternatives,
exposure.batch_tokens). Reads
data/canary/{ground_truth.jsonl,corpus/}. Writes data/canary/model/tuned.gguf (+ .sha256
stamp), data/canary/model/model.json (model config serving it through the gateway),
data/canary/memorization.jsonl (per canary, before/after, duplication, exposure and rank under
the tuned and the control model; no raw values) and metrics/canary_finetune.json (loss per
epoch, seconds per step, tokens/s, memorization per duplication level, exposure timing).
"""

from __future__ import annotations

import sys

from testleak.canary import run_finetune
from testleak.paths import Paths
from testleak.stage import entry, load_stage_params


def main(argv: list[str] | None = None) -> int:
    params = load_stage_params()
    m = run_finetune(params, Paths())
    print(f"finetune: {m['steps']} steps, {m['seconds_per_step']} s/step, memorized "
          f"{m['memorized_before']:.0%} -> {m['memorized_after']:.0%} of {m['canaries']} canaries", file=sys.stderr)
    return 0


if __name__ == "__main__":
    entry(main)
