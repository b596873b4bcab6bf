"""The pair-based accountant: :mod:`.tight` (certified single use and FFT composition), :mod:`.estimates` (memory
and time before work), :mod:`.bucketed_weak` (the weak adversary's k-RR pair at any n)."""
