"""Pairs in row form (:mod:`.binomial_rows`): exact single-use δ(ε) (:mod:`.rows_pld`), streamed grid placement
(:mod:`.rows_stream`) and certified bucket rows whose cost does not grow with n (:mod:`.bucketed`)."""
