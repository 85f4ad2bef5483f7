"""testleak: audit how much private data code LLMs leak, via test generation.

Reimplements "Probing Privacy Leaks in LLM-based Code Generation via Test Generation"
(arXiv 2605.15248) as DVC stages configured through Hydra.
"""

__version__ = "0.1.0"
