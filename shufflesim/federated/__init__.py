"""Federated learning in the shuffle model (FLAME, seed 002: Liu, Cao, Chen, Guo, Yoshikawa, AAAI 2021).

Layer: above ``experiments | mechanisms``, below ``protocols`` (the plug-in protocols in
``protocols/flame.py`` wrap it).  Modules:

* :mod:`.randomisers` — per-coordinate randomisers (Laplace, Balle et al.'s R_{γ,b}) with their blanket
  distributions and de-biasing;
* :mod:`.encoding` — clipping/rescaling, the users' Randomize (SS-Simple, SS-Double, SS-Topk), the padding
  shuffler (Algorithm 3) and the analyser's aggregate;
* :mod:`.crypto` — X25519 + HKDF-SHA256 + AES-GCM encryption to the analyser's key, replay detection;
* :mod:`.accounting` — the paper's theorems, its published-number pipeline, and valid/tighter values;
* :mod:`.model`, :mod:`.data`, :mod:`.training` — logistic regression, data sets, the training loop and
  baselines (non-private, central DP, local DP).

Nothing is imported here, so ``import shufflesim.federated.crypto`` does not pull in the training code.
"""
