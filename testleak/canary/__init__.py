"""Ground truth by planted canaries (beyond the paper).

plant (values or a user spec, k copies each, in the context kinds of contexts; corpus) -> finetune
(LoRA, memorization, exposure under tuned and control model) -> gguf_io (write-back) -> pipeline
(calibration runs against tuned and control models) and probe (the prefix probe: the ceiling) ->
recall/report (per method, attribute, context kind, duplication level and exposure band, beside the
ceiling).
"""

from .pipeline import (CanaryPaths, make_canary_corpus, read_ground_truth, report_calibration, run_calibration,
                       run_finetune)

__all__ = ["CanaryPaths", "make_canary_corpus", "read_ground_truth", "report_calibration", "run_calibration",
           "run_finetune"]
