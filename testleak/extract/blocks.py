"""Split a model answer into fenced code blocks (CommonMark-style fences).

Method: a line scanner for opening fences (three or more backticks or tildes, any
indentation, optional info string) closed by a fence of the same character and at least
the same length. An unclosed fence runs to the end of the text (answers cut off by
``max_tokens`` are common). A text without any fence is one unfenced block.
The info string's first word is normalised to a language name (``py`` -> ``python``).

Provenance: paper appendix B.2 (the test LLM answers in markdown; the unit-test block
is what ExtractPII reads). Self-contained on purpose: other packages may import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\n`]*?)[ \t]*$", re.M)

LANGUAGE_ALIASES = {
    "py": "python", "python3": "python", "py3": "python", "pytest": "python", "python": "python",
    "pycon": "python", "sol": "solidity", "solidity": "solidity",
    "js": "javascript", "jsx": "javascript", "node": "javascript", "nodejs": "javascript",
    "mjs": "javascript", "cjs": "javascript", "javascript": "javascript",
    "ts": "typescript", "tsx": "typescript", "typescript": "typescript",
    "java": "java", "kotlin": "kotlin", "kt": "kotlin", "scala": "scala",
    "go": "go", "golang": "go", "php": "php", "rb": "ruby", "ruby": "ruby",
    "cs": "csharp", "c#": "csharp", "csharp": "csharp", "rs": "rust", "rust": "rust",
    "c": "c", "h": "c", "cpp": "cpp", "c++": "cpp", "cc": "cpp", "hpp": "cpp",
    "swift": "swift", "json": "json", "jsonc": "json", "json5": "json",
    "yaml": "yaml", "yml": "yaml", "toml": "toml", "sh": "shell", "bash": "shell",
    "shell": "shell", "zsh": "shell", "console": "shell", "sql": "sql", "r": "r",
    "perl": "perl", "pl": "perl", "dart": "dart", "lua": "lua",
}


def normalize_language(name: str | None) -> str | None:
    """Map a fence info word or a user-given language to a canonical name (None if empty)."""
    if not name:
        return None
    word = name.strip().split()[0].strip("{}.").lower() if name.strip() else ""
    if not word:
        return None
    return LANGUAGE_ALIASES.get(word, word)


@dataclass(frozen=True)
class CodeBlock:
    """A code block: ``code == text[start:end]``."""

    code: str
    language: str | None
    info: str
    start: int
    end: int
    fenced: bool
    closed: bool


def split_code_blocks(text: str, default_language: str | None = None) -> list[CodeBlock]:
    """Return the fenced code blocks of ``text`` in order, or one unfenced block.

    ``default_language`` applies to blocks without an info string and to unfenced text.
    """
    text = text or ""
    default = normalize_language(default_language)
    blocks: list[CodeBlock] = []
    pos = 0
    n = len(text)
    while pos <= n:
        m = _FENCE.search(text, pos)
        if not m:
            break
        fence, info = m.group(1), m.group(2)
        body_start = m.end() + 1 if m.end() < n else n
        close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$", re.M)
        c = close.search(text, body_start)
        if c:
            body_end = c.start()
            lang = normalize_language(info) or default
            blocks.append(CodeBlock(text[body_start:body_end], lang, info, body_start, body_end, True, True))
            pos = c.end() + 1
        else:
            lang = normalize_language(info) or default
            blocks.append(CodeBlock(text[body_start:n], lang, info, body_start, n, True, False))
            break
    if not blocks:
        return [CodeBlock(text, default, "", 0, len(text), False, False)]
    return blocks
