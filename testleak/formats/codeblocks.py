"""Code blocks of a markdown answer: the one splitter for elicitation and extraction (App. B.2).

markdown-it (CommonMark, block rules only) finds fenced code blocks, also inside list items and
block quotes; ``indented=True`` adds indented ones. An unclosed fence runs to the end of its
container (answers cut by ``max_tokens`` are common); a text without any block is one ``text``
block. The info string's first word is normalised by :data:`LANGUAGE_ALIASES`, the project's one
alias table. ``code`` is the content as markdown defines it (indentation and container prefixes
removed) and :meth:`CodeBlock.to_text` maps offsets in it back to the text; for a fence at
column 0 (the usual case) ``code == text[start:end]``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

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

_md = MarkdownIt("commonmark").disable("inline")  # block structure is all we need
_LINE_END = re.compile(r"\r\n|\r|\n")  # markdown-it's own line breaks


def normalize_language(name: str | None) -> str | None:
    """Map a fence info word or a user-given language to a canonical name (None if empty)."""
    if not name or not name.strip():
        return None
    word = name.strip().split()[0].strip("{}.").lower()
    if not word:
        return None
    return LANGUAGE_ALIASES.get(word, word)


@dataclass(frozen=True)
class CodeBlock:
    """One code block of a markdown text (see the module docstring).

    ``kind`` is ``fence``, ``indented`` or ``text`` (the whole text, no markdown block).
    ``closed`` is False for a fence cut off by the end of the text.
    """

    code: str
    language: str | None
    info: str = ""
    start: int = 0
    end: int = 0
    kind: str = "text"
    closed: bool = False
    index: int = 0
    # (offset in code, offset in text) per code line, only when code is not verbatim
    line_map: tuple[tuple[int, int], ...] = field(default=(), repr=False, compare=False)

    @property
    def fenced(self) -> bool:
        """Delimited by markdown (a fence or an indented block), not the whole text."""
        return self.kind != "text"

    def to_text(self, offset: int) -> int:
        """The text offset of ``code[offset]``."""
        if not self.line_map:
            return self.start + offset
        i = bisect.bisect_right(self.line_map, (offset, float("inf"))) - 1
        code_at, text_at = self.line_map[max(i, 0)]
        return text_at + offset - code_at


def _line_map(text: str, starts: list[int], first: int, content: str) -> tuple[tuple[int, int], ...]:
    """Per content line: where it starts in ``content`` and in ``text`` (prefix removed)."""
    out, at = [], 0
    for j, line in enumerate(content.split("\n")):
        ln = first + j
        if ln >= len(starts):
            break
        raw_end = starts[ln + 1] if ln + 1 < len(starts) else len(text)
        raw = text[starts[ln]:raw_end].rstrip("\r\n")
        out.append((at, starts[ln] + max(len(raw) - len(line), 0)))
        at += len(line) + 1
    return tuple(out)


def _closing_fence(line: str, markup: str) -> bool:
    s = line.strip().lstrip(">").strip()
    return len(s) >= len(markup) and s == markup[0] * len(s)


def split_code_blocks(text: str, default_language: str | None = None, *,
                      indented: bool = False) -> list[CodeBlock]:
    """The code blocks of ``text`` in order, or one ``text`` block when it has none.

    ``default_language`` applies to blocks without an info string and to the text block;
    ``indented`` also returns indented code blocks (four-space indented paragraphs).
    """
    text = text if isinstance(text, str) else ""
    default = normalize_language(default_language)
    if not indented and "```" not in text and "~~~" not in text:  # no fence possible: skip the parser
        return [CodeBlock(text, default, "", 0, len(text))]
    starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
    blocks: list[CodeBlock] = []
    for tok in _md.parse(text):
        if not (tok.type == "fence" or (indented and tok.type == "code_block")) or not tok.map:
            continue
        a, b = tok.map
        fence = tok.type == "fence"
        closed = False
        if fence:
            last = text[starts[b - 1]:starts[b] if b < len(starts) else len(text)] if b - 1 > a else ""
            closed = bool(last) and _closing_fence(last, tok.markup)
            first, stop = a + 1, (b - 1 if closed else b)
        else:
            first, stop = a, b
        s = starts[first] if first < len(starts) else len(text)
        e = max(s, starts[stop] if stop < len(starts) else len(text))
        code = tok.content
        lmap = () if text[s:e] == code else _line_map(text, starts, first, code)
        lang = (normalize_language(tok.info) if fence else None) or default
        blocks.append(CodeBlock(code, lang, tok.info if fence else "", s, e, "fence" if fence else "indented",
                                closed, len(blocks), lmap))
    if not blocks:
        return [CodeBlock(text, default, "", 0, len(text))]
    return blocks
