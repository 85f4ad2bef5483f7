"""The documentation holds together: README.md stays short (at most 200 lines: what it is, the two
commands, what the default run shows, where to go next), every relative link of README.md and
docs/*.md points to an existing file and, for `#anchor` links into markdown, to an existing
heading (GitHub's slugs), and the README's headline table agrees with the committed
reports/figure1.md."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from testleak.config import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", flags=re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", flags=re.M)


def prose(text: str) -> str:
    """The text outside fenced blocks and inline code (links there are not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation removed, spaces -> '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)       # a link's text
    text = re.sub(r"<[^>]+>", "", text).lower()                       # inline HTML
    text = re.sub(r"[^\w\- ]", "", text)                              # punctuation (keeps _ and -)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, repeated headings numbered as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for _, title in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        s = slug(title)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(prose(page.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", t, flags=re.I)]   # http:, https:, mailto:, ...


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else str(p)


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path)).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target}: no file {_rel(dest)}")
        elif anchor and dest.suffix == ".md" and unquote(anchor).lower() not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {_rel(dest)}")
    return bad


def test_readme_is_at_most_200_lines():
    n = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move the detail to docs/"


def test_readme_links_every_docs_page():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in relative_links(ROOT / "README.md")}
    missing = [p.relative_to(ROOT).as_posix() for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link to: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(page):
    assert relative_links(page) or page.name != "README.md"
    bad = broken_links(page)
    assert not bad, f"broken links in {page.relative_to(ROOT)}:\n" + "\n".join(bad)


def test_slugs_and_link_checker(tmp_path):
    assert slug("Two verification protocols (`baselines.protocol`)") == "two-verification-protocols-baselinesprotocol"
    assert slug("How to add ...") == "how-to-add-"
    assert slug("ExtractPII vs Presidio vs detect-secrets (`compare_extractors.py`)") == \
        "extractpii-vs-presidio-vs-detect-secrets-compare_extractorspy"
    (tmp_path / "a.md").write_text("# Top\n## Part\n## Part\n```\n# not a heading\n```\n", encoding="utf-8")
    assert anchors(tmp_path / "a.md") == {"top", "part", "part-1"}
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#part-1) [self](#b) ![img](a.md) [web](https://x.org/y) `[code](nope.md)`\n"
                    "[gone](missing.md) [bad anchor](a.md#nope) [bad self](#nope)\n# B\n", encoding="utf-8")
    assert relative_links(page) == ["a.md#part-1", "#b", "a.md", "missing.md", "a.md#nope", "#nope"]
    assert [b.split(":")[0] for b in broken_links(page)] == ["missing.md", "a.md#nope", "#nope"]


def _table(text: str, first_header: str) -> list[dict[str, str]]:
    """The markdown table whose header starts with `first_header`, as rows of header -> cell."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"| {first_header} |"))
    cells = lambda l: [c.strip() for c in l.strip().strip("|").split("|")]  # noqa: E731
    header, rows = cells(lines[start]), []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, cells(line))))
    return rows


def test_readme_headline_table_matches_the_committed_report():
    """The README's table is a copy of reports/figure1.md's rows (a subset of its columns): when the
    default run is regenerated with other numbers, this fails until the README is updated."""
    ours = _table((ROOT / "README.md").read_text(encoding="utf-8"), "run")
    report = {r["run"]: r for r in _table((ROOT / "reports/figure1.md").read_text(encoding="utf-8"), "run")}
    assert ours and {r["run"] for r in ours} == set(report)
    for row in ours:
        assert set(row) <= set(report[row["run"]]), set(row) - set(report[row["run"]])
        assert row == {k: report[row["run"]][k] for k in row}, row["run"]
