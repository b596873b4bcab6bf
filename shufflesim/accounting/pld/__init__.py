"""Privacy loss distributions of a neighbouring pair: the pair (:mod:`.pmf_pair`), its atoms and exact single use
(:mod:`.distribution`), grid placement (:mod:`.placement`, :mod:`.discretisation`), FFT composition (:mod:`.fft`),
exact composition (:mod:`.exact_compose`) and MGF tails (:mod:`.mgf`, :mod:`.tails`)."""
