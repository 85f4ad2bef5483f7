"""Metrics of the paper's Sec. 6 on plain record lists (records in, numbers out).

- :mod:`.steps`: step-wise counts per attribute/category and permille (Table 2), refusal rate.
- :mod:`.leakage`: LP-L and IL-L (Table 3).
- :mod:`.ablation`: TP/FN/FP, precision/recall/F1 against the full pipeline (Table 4).
- :mod:`.curves`: confirmed instances vs number of responses (Fig. 1).
- :mod:`.run`: everything for one run, as written to ``metrics/RUN.json``.
"""

from .ablation import ablation_scores, confirmed_keys
from .curves import cumulative_confirmed
from .leakage import IL_LEVELS, LP_LEVELS, largest_component, leakage_levels, response_elements
from .rates import permille, ratio, round_half_up
from .records import confirmed_only, is_confirmed, key_of, policies_of, response_attributes
from .run import run_curve, run_keys, run_metrics
from .steps import STEPS, nominal_test_cases, refusal_stats, step_counts

__all__ = [
    "ablation_scores", "confirmed_keys", "cumulative_confirmed", "IL_LEVELS", "LP_LEVELS",
    "largest_component", "leakage_levels", "response_elements", "permille", "ratio",
    "round_half_up", "confirmed_only", "is_confirmed", "key_of", "policies_of",
    "response_attributes", "run_curve", "run_keys", "run_metrics", "STEPS",
    "nominal_test_cases", "refusal_stats", "step_counts",
]
