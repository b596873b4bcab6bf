"""Message spaces: what a single message can be, and how many bits it takes to send it."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class IntegerRange:
    """Integers ``low, low+1, ..., high`` (both ends included)."""

    low: int
    high: int

    @property
    def size(self) -> int:
        return self.high - self.low + 1

    @property
    def bits(self) -> int:
        """Bits to encode one message: ceil(log2(size)), at least 1."""
        return max(1, math.ceil(math.log2(self.size)))

    def __str__(self) -> str:
        return f"{{{self.low}..{self.high}}}"


@dataclass(frozen=True)
class ModularIntegers:
    """The group Z_q = {0, ..., q-1}."""

    q: int

    @property
    def size(self) -> int:
        return self.q

    @property
    def bits(self) -> int:
        return max(1, math.ceil(math.log2(self.q)))

    def __str__(self) -> str:
        return f"Z_{self.q}"


@dataclass(frozen=True)
class RealNumbers:
    """Real-valued messages, sent as IEEE doubles (64 bits)."""

    @property
    def bits(self) -> int:
        return 64

    def __str__(self) -> str:
        return "R"
