"""ExtractPII (paper section 4.2, appendix B.2): deterministic extraction of candidate
privacy values from the test code a test LLM generated.

Public API::

    extract(text, taxonomy, *, language=None, exclude=()) -> list[dict]
    extract_detailed(...) -> (list[dict], ExtractInfo)
    candidates_from_responses(responses, taxonomy) -> (candidate records, stats)
    split_code_blocks(text, default_language=None) -> list[CodeBlock]

See :mod:`.core` (pipeline, test-case numbering), :mod:`.pyparse` / :mod:`.lexer` (which
literals and keys) and :mod:`.detect` (value -> attribute precedence).
"""

from ..formats import CodeBlock, normalize_language, split_code_blocks
from .core import (ExtractInfo, candidates_from_responses, extract, extract_detailed, prompt_texts,
                   response_text)
from .detect import CHECKS, Detector

__all__ = [
    "CHECKS", "CodeBlock", "Detector", "ExtractInfo", "candidates_from_responses", "extract",
    "extract_detailed", "normalize_language", "prompt_texts", "response_text", "split_code_blocks",
]
