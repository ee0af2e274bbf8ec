"""MkDocs hook: include sections of `benchmarks/README.md` in the method pages, so that the
tables live in one file and the docs never hold a stale copy.

A page line `<!-- benchmarks: SVBMC: evidence and posterior -->` is replaced by the section of
`benchmarks/README.md` whose heading starts with that text: its body up to the next heading
of the same or a higher level, subsections included, with headings shifted to nest under
the page heading above the directive. Links relative to `benchmarks/` (scripts, result files) point
outside the docs, so they become their text followed by the path from the repository root.
A heading that matches no section, or more than one, fails the build.
"""

import pathlib
import re

from mkdocs.exceptions import PluginError

BENCHMARKS_README = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "README.md"
DIRECTIVE = re.compile(r"^<!-- benchmarks: (?P<heading>.+?) -->$", re.MULTILINE)
HEADING = re.compile(r"^(?P<hashes>#+) (?P<title>.+)$")
RELATIVE_LINK = re.compile(r"\[(?P<text>[^\]]+)\]\((?!https?://|#)(?P<target>[^)]+)\)")


def _unlink(link):
    path = f"benchmarks/{link['target']}"
    return f"`{path}`" if link["text"] == f"`{link['target']}`" else f"{link['text']} (`{path}`)"


def _heading_levels(lines):
    """{line index: heading level} of the Markdown headings, skipping fenced code blocks."""
    levels, in_fence = {}, False
    for index, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and (match := HEADING.match(line)):
            levels[index] = len(match["hashes"])
    return levels


def _section(lines, heading, enclosing_level):
    levels = _heading_levels(lines)
    starts = [index for index in levels if HEADING.match(lines[index])["title"].startswith(heading)]
    if len(starts) != 1:
        raise PluginError(f"benchmarks/README.md has {len(starts)} sections whose heading starts with {heading!r}.")
    start = starts[0]
    end = next((index for index in levels if index > start and levels[index] <= levels[start]), len(lines))
    body = []
    for index in range(start + 1, end):
        line = lines[index]
        if index in levels:
            line = "#" * (levels[index] - levels[start] + enclosing_level) + " " + HEADING.match(line)["title"]
        body.append(RELATIVE_LINK.sub(_unlink, line))
    return "\n".join(body).strip()


def on_page_markdown(markdown, page, config, files):
    """Replace every benchmarks directive of the page by its section of benchmarks/README.md,
    its subsections one level below the page heading that precedes the directive."""
    if not DIRECTIVE.search(markdown):
        return markdown
    readme = BENCHMARKS_README.read_text().splitlines()
    page_lines = markdown.splitlines()
    page_levels = _heading_levels(page_lines)
    output = []
    for index, line in enumerate(page_lines):
        directive = DIRECTIVE.fullmatch(line)
        if directive is None:
            output.append(line)
            continue
        enclosing = [level for heading_index, level in page_levels.items() if heading_index < index]
        output.append(_section(readme, directive["heading"], enclosing[-1] if enclosing else 1))
    return "\n".join(output)
