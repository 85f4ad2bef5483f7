"""Code blocks in an LLM answer (paper Sec. 4.2, step 1-2 of Fig. 2: c = LLM_test(q)).

Blocks come from the project's one splitter, :func:`testleak.formats.split_code_blocks`
(markdown-it, CommonMark: fenced and indented blocks; an unclosed fence, as when
``max_tokens`` cuts the answer, runs to the end of the text).  The language comes from
the fence's info string (aliases normalised: ``py`` -> python, ``js`` -> javascript,
``c#`` -> csharp, ...) or, when the fence has none, is guessed: Python when ``ast`` parses
it and it defines something, else distinctive keywords (``<?php``, ``package main``,
``using System``, ``public class``, type annotations, ``function``/``=>``).  An answer with
no fence at all is taken as one block only when it parses as Python with a definition or
the keyword guess names a language (the model was told "Provide the code ONLY").
Blocks in non-programming languages (shell, JSON, YAML, SQL, output) are dropped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from ..formats import CodeBlock, normalize_language, split_code_blocks

NON_CODE = {
    "bash", "sh", "shell", "zsh", "console", "shell-session", "powershell", "ps1", "bat", "cmd",
    "json", "jsonc", "yaml", "yml", "toml", "ini", "xml", "html", "css", "scss", "markdown", "md",
    "text", "txt", "plaintext", "plain", "output", "sql", "mysql", "postgresql", "csv", "diff",
    "dockerfile", "makefile", "env", "properties", "graphql", "http", "log",
}

_KEYWORDS: list[tuple[str, re.Pattern]] = [
    ("php", re.compile(r"<\?php|\$this->|\bfunction\s+\w+\s*\(\s*(?:\??\w+\s+)?\$\w+")),
    ("go", re.compile(r"^\s*package\s+\w+\s*$|\bfunc\s+(?:\([^)]*\)\s*)?\w+\s*\(|:=", re.M)),
    ("csharp", re.compile(r"^\s*using\s+System|\bnamespace\s+[\w.]+\s*\{?|Console\.Write|\{\s*get;\s*set;\s*\}|\bpublic\s+(?:async\s+)?(?:Task|string|bool|void)\s+[A-Z]\w*\s*\(", re.M)),
    ("java", re.compile(r"^\s*import\s+java\.|System\.out\.|\bpublic\s+(?:static\s+)?(?:final\s+)?class\s+\w+|\bprivate\s+(?:final\s+)?String\s+\w+\s*;|@Override", re.M)),
    ("typescript", re.compile(r"\binterface\s+\w+\s*\{|\w\s*:\s*(?:string|number|boolean)\b[^:]|\btype\s+\w+\s*=|\bexport\s+(?:default\s+)?(?:async\s+)?function\s+\w+\s*\([^)]*:\s*\w")),
    ("javascript", re.compile(r"\bfunction\s+\w+\s*\(|=>|\bconst\s+\w+\s*=|\blet\s+\w+\s*=|console\.log|module\.exports|require\(")),
    ("ruby", re.compile(r"^\s*def\s+\w+[?!]?(?:\(.*\))?\s*$[\s\S]*^\s*end\s*$", re.M)),
]


def _python_defines(code: str) -> bool:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)


def guess_language(code: str) -> str:
    """Best guess of a block's language, ``unknown`` when nothing fits."""
    if _python_defines(code):
        return "python"
    if re.search(r"^\s*(?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->\s*[^:]+)?:\s*$", code, re.M):
        return "python"  # truncated or slightly broken Python
    for lang, pat in _KEYWORDS:
        if pat.search(code):
            return lang
    return "unknown"


def extract_code_blocks(text: str) -> list[CodeBlock]:
    """Programming-language code blocks of an answer, in order (see module docstring).

    ``language`` is a normalised name or ``unknown``; ``index`` numbers the kept blocks."""
    text = text if isinstance(text, str) else ""
    blocks: list[CodeBlock] = []
    for b in split_code_blocks(text, indented=True):
        if not b.code.strip():
            continue
        lang = b.language
        if lang in NON_CODE:
            continue
        if lang is None:
            lang = guess_language(b.code)
            if lang == "unknown" and b.kind != "fence":
                continue  # an indented paragraph, or prose without code
        blocks.append(replace(b, language=lang, index=len(blocks)))
    return blocks
