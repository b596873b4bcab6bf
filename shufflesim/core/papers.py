"""The papers the project started from, and the "seed NNN" numbers that name them in help texts, scenario titles,
reports and plots (docs/theory.md#seed-numbers holds the same key with the version caveats)."""

from __future__ import annotations

import re

#: seed number -> the paper (authors, year, venue, identifier)
SEED_PAPERS: dict[str, str] = {
    "000": "Koskela, Heikkilä, Honkela 2021, Tight accounting in the shuffle model of DP, short version "
           "(same work as 001)",
    "001": "Koskela, Heikkilä, Honkela 2021, Tight accounting in the shuffle model of DP, arXiv:2106.00477",
    "002": "Liu, Cao, Chen, Guo, Yoshikawa, FLAME, AAAI 2021, arXiv:2009.08063",
    "003": "Biswas, Jung, Palamidessi, Tight DP guarantees for the shuffle model with k-RR, FPS 2023, "
           "arXiv:2205.08858",
    "004": "Balle, Bell, Gascón, Nissim, Private summation in the multi-message shuffle model, CCS 2020, "
           "arXiv:2002.00817",
}

#: seed number -> the short citation used where space is short (plot titles)
SEED_SHORT: dict[str, str] = {
    "000": "Koskela et al. 2021, short version",
    "001": "Koskela et al. 2021",
    "002": "Liu et al. 2021, FLAME",
    "003": "Biswas et al. 2023",
    "004": "Balle et al. 2020",
}

#: "seed 001", "Seed 004's", "seeds 000/001" (each number of a "seeds A/B" is found)
_SEED = re.compile(r"\bseeds?\s+((?:\d{3}\s*/\s*)*\d{3})", re.IGNORECASE)


def seeds_named(text: str) -> list[str]:
    """The seed numbers ``text`` names, in increasing order (only numbers of :data:`SEED_PAPERS`)."""
    found = {num for m in _SEED.finditer(text) for num in re.findall(r"\d{3}", m.group(1))}
    return sorted(found & SEED_PAPERS.keys())


def seed_key(text: str) -> list[str]:
    """One line ``seed 001 = <paper>`` for each seed ``text`` names (empty if it names none)."""
    return [f"seed {num} = {SEED_PAPERS[num]}" for num in seeds_named(text)]
