"""The unit both parsers produce: a literal value with the name it is bound to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Literal:
    """A literal found in code; offsets are relative to the parsed code string.

    ``start:end`` is the span of the value's characters when the value appears verbatim
    in the source (no escapes), else the span of the whole literal token or expression.
    ``key`` is the key / parameter / variable name the value is bound to, or None.
    """

    value: str
    key: str | None
    start: int
    end: int


@dataclass(frozen=True)
class Parsed:
    literals: list[Literal]
    tests: list[tuple[int, int]]  # test-case intervals [start, end) in the code
    parser: str  # "ast" | "lexer"
