"""Reports of the paper's Sec. 6 built from masked metrics (never from raw values).

- :mod:`.tables`: Table 2 (step-wise), Table 3 (LP/IL), Table 4 (ablation) as rows.
- :mod:`.figures`: Figure 1 (confirmed instances vs number of responses), matplotlib Agg.
- :mod:`.comparison`: the paper's published numbers beside ours (paper_comparison.md).
- :mod:`.inputs`: the config the report reads (``ReportSettings``, typed) and the metrics and
  curves of the experiment's runs (``load_inputs``).
- :mod:`.build`: writes every report file (Markdown, CSV, PNG) under reports/.
"""

from .build import build_reports
from .inputs import ReportSettings, load_inputs
from .paper import load_paper_results

__all__ = ["ReportSettings", "build_reports", "load_inputs", "load_paper_results"]
