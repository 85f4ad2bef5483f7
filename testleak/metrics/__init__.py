"""Metrics of the paper's Sec. 6 on plain record lists (records in, numbers out).

- :mod:`.steps`: step-wise counts per attribute/category and permille (Table 2), refusal rate.
- :mod:`.leakage`: LP-L and IL-L (Table 3).
- :mod:`.ablation`: TP/FN/FP, precision/recall/F1 against the full pipeline (Table 4).
- :mod:`.aggregate`: means over test models: per family and over the families.
- :mod:`.curves`: confirmed instances vs number of responses and completion tokens (Fig. 1), and its CSV file.
- :mod:`.cost`: confirmed leaks per 1,000 completion tokens and per 100 calls, the run's elicitation budget.
- :mod:`.run`: what a run is (:func:`run_meta`) and everything for one run (``data/metrics/RUN.json``) and its headline
  numbers tracked in git (``metrics/RUN.json``).
"""

from .ablation import ablation_scores, confirmed_keys, prf
from .aggregate import family_means, mean_metrics
from .cost import efficiency, response_completion_tokens, spend_of
from .curves import cumulative_confirmed, read_curve, write_curve
from .leakage import IL_LEVELS, LP_LEVELS, elements_by_test_case, largest_component, leakage_levels, run_test_cases
from .rates import permille, ratio, round_half_up
from .records import confirmed_only, is_confirmed, key_of, policies_of, response_attributes
from .run import headline, run_curve, run_meta, run_metrics
from .steps import (JUDGED_OUTCOMES, STEPS, category_mean, judged_outcome, judged_outcomes, nominal_test_cases, refusal_rate, refusal_stats, response_test_cases,
                    step_counts, tests_written, tokens_of, truncated, with_tests_written)

__all__ = [
    "efficiency", "response_completion_tokens", "spend_of",
    "ablation_scores", "confirmed_keys", "family_means", "mean_metrics", "cumulative_confirmed", "IL_LEVELS", "LP_LEVELS",
    "largest_component", "leakage_levels", "run_test_cases", "elements_by_test_case", "permille", "ratio",
    "round_half_up", "confirmed_only", "is_confirmed", "key_of", "policies_of",
    "response_attributes", "run_curve", "headline", "run_metrics", "STEPS", "prf", "category_mean", "refusal_rate",
    "response_test_cases", "tokens_of", "JUDGED_OUTCOMES", "judged_outcome", "judged_outcomes",
    "nominal_test_cases", "refusal_stats", "tests_written", "truncated", "with_tests_written", "step_counts", "read_curve", "write_curve", "run_meta",
]
