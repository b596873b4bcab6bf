"""Answers from enumeration and exact formulas over data sets: exact shuffled binary RR (:mod:`.exact_rr2`),
brute-force oracles for tiny n (:mod:`.bruteforce`, :mod:`.shuffle_oracle`) and genuine lower ends of shuffled
k-RR from explicit data sets (:mod:`.krr_shuffled`)."""
