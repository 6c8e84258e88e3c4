"""The README is a user's page: short, its two commands the ones CI and the Makefile run, and
every relative link in it and in docs/*.md pointing at a file that exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _section(text: str, heading: str) -> str:
    """The text under `## heading`, up to the next heading of level 2."""
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"README has no '## {heading}' section"
    return m.group(1)


def _two_commands() -> list[str]:
    block = re.search(r"^```bash\n(.*?)^```", _section(README.read_text(encoding="utf-8"), "Two commands"),
                      re.S | re.M)
    assert block, "the 'Two commands' section has no bash block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_readme_is_at_most_300_lines():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 300, f"README.md has {n} lines; move detail into docs/"


def test_the_two_commands_are_the_ones_ci_and_the_makefile_run():
    assert _two_commands() == ["make demo", "make test"]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert "make test" in ci, ".ci/run no longer runs the README's test command"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no '{target}' target"
    test_recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert test_recipe and "pytest" in test_recipe.group(1) and "tests" in test_recipe.group(1)
    assert "examples/quickstart.py" in re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)


def _relative_links(path: Path) -> list[str]:
    text = _CODE_SPAN.sub("", _FENCE.sub("", path.read_text(encoding="utf-8")))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", t) and not t.startswith("#")]


def test_every_relative_link_in_the_readme_and_docs_resolves():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for target in _relative_links(page):
            file = target.split("#", 1)[0]
            if not (page.parent / file).exists():
                missing.append(f"{page.relative_to(ROOT)}: {target}")
    assert not missing, "links to files that do not exist:\n" + "\n".join(missing)
    assert _relative_links(README), "the README links to no docs"


def test_the_readme_links_every_doc():
    linked = {(README.parent / t.split("#", 1)[0]).resolve() for t in _relative_links(README)}
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert doc.resolve() in linked, f"README.md does not link {doc.relative_to(ROOT)}"
