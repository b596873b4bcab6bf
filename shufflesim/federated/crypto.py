"""Encryption of FLAME's messages to the analyser (seed 002 Algorithm 2, lines 1, 11 and 17).

An authenticated hybrid scheme built from the ``cryptography`` package: for every message a fresh
ephemeral X25519 key pair, the shared secret with the analyser's public key, HKDF-SHA256 (bound to both
public keys) to a one-time AES-256-GCM key, and AES-GCM over the 8-byte value with the round number and
the coordinate index as associated data.  A ciphertext is ``ephemeral public key (32 bytes) ‖ AES-GCM
output (8 + 16 bytes)``.  One fresh ephemeral key per message keeps the messages of one user unlinkable
(a per-user key would let the shuffler and the analyser group a user's coordinates back together).

Roles, separated by construction:

* :class:`AnalyserKeys` holds the private key and is the only object that can create a
  :class:`Decryptor`; the analyser keeps it.
* :class:`PublicKey` (what users and the shuffler get) holds only the public key: it can encrypt —
  which the shuffler needs for its dummy messages — and has no way to decrypt.
* :class:`Decryptor` rejects, and counts, ciphertexts that fail authentication (tampered bytes, a message
  moved to another coordinate or round), ciphertexts already seen (replays; the ephemeral key is the
  message's identity), malformed ones (wrong type or length, or ciphertexts beyond the indices) and missing
  ones (indices without a ciphertext).  Rejected messages are never used.  What a correctly encrypted value
  may be is the analyser's check, not the decryptor's (:func:`shufflesim.federated.encoding.run_round`
  typechecks it against the randomiser's output range).
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass, field

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["AnalyserKeys", "PublicKey", "Decryptor", "DecryptReport", "CIPHERTEXT_BYTES"]

_INFO = b"shufflesim FLAME v1"
_NONCE = bytes(12)  # every AES key is used for exactly one message
CIPHERTEXT_BYTES = 32 + 8 + 16


def _aad(round_id: int, index: int) -> bytes:
    return b"flame" + struct.pack(">QI", round_id, index)


def _key(shared: bytes, eph: bytes, recipient: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO + eph + recipient).derive(shared)


class PublicKey:
    """The analyser's public key: encrypts, cannot decrypt."""

    __slots__ = ("_pk", "raw")

    def __init__(self, raw: bytes):
        self._pk = X25519PublicKey.from_public_bytes(raw)
        self.raw = bytes(raw)

    def encrypt(self, values: np.ndarray, indices: np.ndarray, round_id: int) -> list[bytes]:
        """One ciphertext per (value, index) pair."""
        vals = np.asarray(values, dtype="<f8").ravel()
        idx = np.asarray(indices, dtype=np.int64).ravel()
        if vals.shape != idx.shape:
            raise ValueError("values and indices must have the same length")
        out = []
        raw = vals.tobytes()
        for i, j in enumerate(idx.tolist()):
            v = raw[8 * i:8 * i + 8]
            eph = X25519PrivateKey.generate()
            eph_raw = eph.public_key().public_bytes_raw()
            k = _key(eph.exchange(self._pk), eph_raw, self.raw)
            out.append(eph_raw + AESGCM(k).encrypt(_NONCE, v, _aad(round_id, j)))
        return out


@dataclass
class DecryptReport:
    """Counts of one round's decryption: accepted, and rejected (tampered/misrouted, replayed, malformed,
    missing: an index that arrived without a ciphertext)."""

    accepted: int = 0
    tampered: int = 0
    replayed: int = 0
    malformed: int = 0
    missing: int = 0

    @property
    def rejected(self) -> int:
        return self.tampered + self.replayed + self.malformed + self.missing

    def as_dict(self) -> dict:
        return {**asdict(self), "rejected": self.rejected}


class Decryptor:
    """The analyser's decryption (created by :meth:`AnalyserKeys.decryptor` only)."""

    __slots__ = ("_sk", "_pk_raw", "_seen")

    def __init__(self, sk: X25519PrivateKey, _token: object):
        if _token is not _TOKEN:
            raise TypeError("a Decryptor is created by AnalyserKeys.decryptor()")
        self._sk = sk
        self._pk_raw = sk.public_key().public_bytes_raw()
        self._seen: set[bytes] = set()

    def decrypt(self, indices: np.ndarray, ciphertexts: list[bytes], round_id: int,
                report: DecryptReport | None = None) -> tuple[np.ndarray, np.ndarray, DecryptReport]:
        """Values (NaN where rejected), the accepted mask, and the counts.  Indices without a ciphertext are
        counted as ``missing``, ciphertexts without an index as ``malformed`` (neither is used)."""
        idx = np.asarray(indices, dtype=np.int64).ravel()
        ciphertexts = list(ciphertexts)
        rep = report if report is not None else DecryptReport()
        rep.missing += max(0, idx.size - len(ciphertexts))
        rep.malformed += max(0, len(ciphertexts) - idx.size)
        vals = np.full(idx.size, np.nan)
        ok = np.zeros(idx.size, dtype=bool)
        for i, (j, c) in enumerate(zip(idx.tolist(), ciphertexts)):
            if not isinstance(c, (bytes, bytearray)) or len(c) != CIPHERTEXT_BYTES:
                rep.malformed += 1
                continue
            eph = bytes(c[:32])
            if eph in self._seen:
                rep.replayed += 1
                continue
            try:
                shared = self._sk.exchange(X25519PublicKey.from_public_bytes(eph))
                pt = AESGCM(_key(shared, eph, self._pk_raw)).decrypt(_NONCE, bytes(c[32:]), _aad(round_id, j))
            except (InvalidTag, ValueError):
                rep.tampered += 1
                continue
            self._seen.add(eph)
            vals[i] = struct.unpack("<d", pt)[0]
            ok[i] = True
            rep.accepted += 1
        return vals, ok, rep


_TOKEN = object()


@dataclass
class AnalyserKeys:
    """The analyser's key pair.  Give :attr:`public` to users and the shuffler; keep this object."""

    _sk: X25519PrivateKey = field(default_factory=X25519PrivateKey.generate, repr=False)

    @property
    def public(self) -> PublicKey:
        return PublicKey(self._sk.public_key().public_bytes_raw())

    def decryptor(self) -> Decryptor:
        return Decryptor(self._sk, _TOKEN)
