"""Numerics shared by every part of the accountant, and nothing else: log-space arithmetic with directed
rounding (:mod:`.logspace`), the binomial log-PMF with its error model and Chernoff windows (:mod:`.binomial`),
the one safe-side inverter of monotone certified curves (:mod:`.invert`), and the thread pool (:mod:`.threads`)."""
