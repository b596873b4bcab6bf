"""Reproductions of published tables: each module holds a paper's numbers (as *paper claims*, transcribed
and labelled) next to functions that recompute them with shufflesim.

* :mod:`.balle2020` — seed 004 (Balle, Bell, Gascón, Nissim), Appendix G.1, Table 3.
"""

TABLES = ("balle2020",)
