"""Citations resolve (issue 7): every ``docs/theory.md#anchor`` the code or the docs cite exists, and
nothing in the package points at files outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THEORY = ROOT / "docs" / "theory.md"
SOURCES = [*(ROOT / "shufflesim").rglob("*.py"), *(ROOT / "protocols").glob("*.py"), ROOT / "README.md",
           ROOT / "FINDINGS.md", THEORY]


def _anchors() -> set[str]:
    text = THEORY.read_text()
    return set(re.findall(r'<a id="([^"]+)"', text))


def test_every_cited_anchor_exists():
    anchors = _anchors()
    assert len(anchors) > 20
    missing = []
    for path in SOURCES:
        for m in re.finditer(r"theory\.md#([A-Za-z0-9_-]+)", path.read_text()):
            if m.group(1) not in anchors:
                missing.append(f"{path.relative_to(ROOT)}: #{m.group(1)}")
    assert not missing, "\n".join(missing)


def test_anchors_are_unique():
    """An anchor is never reused for something else (docs/theory.md's preamble): each id occurs once."""
    ids = re.findall(r'<a id="([^"]+)"', THEORY.read_text())
    assert sorted({i for i in ids if ids.count(i) > 1}) == []


def test_package_cites_nothing_outside_the_repository():
    bad = []
    for path in [*(ROOT / "shufflesim").rglob("*.py"), *(ROOT / "protocols").glob("*.py")]:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if "FORMULAS" in line or "../shared" in line:
                bad.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad[:30]) + f"\n({len(bad)} lines)"
