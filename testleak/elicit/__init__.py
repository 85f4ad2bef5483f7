"""Elicitation (paper Sec. 4.1-4.2, appendix B): questions, code turn, G(c), test turn.

- :mod:`.questions` Fig. 6 question prompt, list parsing, question records, generic tasks
- :mod:`.code`      fenced code blocks and language detection
- :mod:`.functions` G(c): units that handle privacy fields (ast / tree-sitter / fallback)
- :mod:`.refusal`   refusal detection
- :mod:`.prompts`   Fig. 7 code and test prompts, hint formatting
- :mod:`.responses` the two-turn interaction per run (method ``ours`` of :mod:`testleak.methods`)
"""

from .code import CodeBlock, extract_code_blocks, guess_language, normalize_language
from .functions import FunctionUnit, find_units, select_functions
from .prompts import code_prompt, format_hints, prompt_text, turn2_messages, turn2_prompt
from .questions import (QuestionStats, generate_questions, generic_questions, normalize_task, parse_task_list,
                        question_id, question_prompt)
from .refusal import detect_refusal
from .responses import ElicitSettings, elicit, questions_for_run, response_id, sample_attribute_hints

__all__ = [
    "CodeBlock", "extract_code_blocks", "guess_language", "normalize_language",
    "FunctionUnit", "find_units", "select_functions",
    "code_prompt", "format_hints", "prompt_text", "turn2_messages", "turn2_prompt",
    "QuestionStats", "generate_questions", "generic_questions", "normalize_task", "parse_task_list",
    "question_id", "question_prompt",
    "detect_refusal",
    "ElicitSettings", "elicit", "questions_for_run", "response_id", "sample_attribute_hints",
]
