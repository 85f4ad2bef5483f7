"""Ground truth by planted canaries (GitHub issue 8, beyond the paper).

plant (values, corpus) -> finetune (LoRA, memorization) -> gguf_io (write-back) ->
pipeline (calibration runs against tuned and control models) -> recall/report.
"""

from .pipeline import (CanaryPaths, make_canary_corpus, read_ground_truth, report_calibration, run_calibration,
                       run_finetune)

__all__ = ["CanaryPaths", "make_canary_corpus", "read_ground_truth", "report_calibration", "run_calibration",
           "run_finetune"]
