"""The unit both parsers produce: a literal value with the name it is bound to."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Literal:
    """A literal found in code; offsets are relative to the parsed code string.

    ``start:end`` is the span of the value's characters when the value appears verbatim
    in the source (no escapes), else the span of the whole literal token or expression.
    ``key`` is the key / parameter / variable name the value is bound to, or None.
    ``cut``: the literal's closing quote is missing because the answer ends inside it.
    """

    value: str
    key: str | None
    start: int
    end: int
    cut: bool = False  # an unterminated literal at the end of a cut-off answer


def trimmed(lit: Literal) -> Literal:
    """``lit`` without the blanks around its value (``"  555-867-5309 "``, a test of input
    trimming, holds the number); the span follows the value when it is verbatim."""
    v = lit.value.strip()
    if v == lit.value or not v:
        return lit
    if lit.end - lit.start != len(lit.value):
        return Literal(v, lit.key, lit.start, lit.end, lit.cut)
    lead = len(lit.value) - len(lit.value.lstrip())
    return Literal(v, lit.key, lit.start + lead, lit.start + lead + len(v), lit.cut)


# The key of a literal compared with what a transform returns (``hash_password(p) ==
# "5f4d..."``): derived data, no attribute's value unless its own shape certifies one.
TRANSFORMED_KEY = "<transformed>"


@dataclass(frozen=True)
class Parsed:
    literals: list[Literal]
    tests: list[tuple[int, int]]  # test-case intervals [start, end) in the code
    parser: str  # "ast" | "lexer"


# Calls that compare an expected value with the value under test: a literal argument takes
# the name of the other argument (``assertEqual(user.email, "v")``, ``Assert.AreEqual("v",
# phone)``, ``assert.Equal(t, "v", got.Email)``), shared by both parsers.
ASSERT_CALLS = frozenset({
    "assertEqual", "assertEquals", "assertNotEqual", "assertNotEquals", "assert_equal", "assert_not_equal",
    "assertSame", "assertNotSame", "assertIs", "assertIsNot", "assertIn", "assertNotIn", "assertCountEqual",
    "assertListEqual", "assertTupleEqual", "assertSetEqual", "assertSequenceEqual", "assertArrayEquals",
    "assertIterableEquals", "assertLinesMatch", "AreEqual", "AreNotEqual", "AreSame", "Equal", "NotEqual",
    "Equals", "EqualValues", "deepEqual", "strictEqual", "notEqual", "notStrictEqual", "deepStrictEqual",
})
# Those of them (and NUnit's AreNotSame) that take a message as a third argument: last in JUnit 5,
# NUnit and unittest (``assertEquals(expected, actual, "msg")``), first in JUnit 4
# (``assertEquals("msg", e, a)``); testify's ``Equal(t, expected, actual)`` takes none there.
MESSAGE_THIRD_CALLS = frozenset({
    "assertEqual", "assertEquals", "assertNotEqual", "assertNotEquals", "assertSame", "assertNotSame",
    "assertArrayEquals", "AreEqual", "AreNotEqual", "AreSame", "AreNotSame",
})

# Keys whose string value names the field a sibling value holds: ``{field: "password",
# input: "v"}``, ``{"type": "email", "value": "v"}`` -> ``v`` is bound to ``password`` /
# ``email`` (when its own key names no attribute). Normalized names. The discriminating
# value must be one word of letters (``"password"``, ``"Email"``, ``"密码"``): a phrase or
# compound (``"reset_password"``, ``"Reset password"``) names an action, not a field.
DISCRIMINATORS = frozenset({"field", "field_name", "fieldname", "name", "type", "kind", "attribute", "attr",
                            "key", "label", "category", "input_type"})
FIELD_WORD = re.compile(r"^[^\W\d_]+$")
