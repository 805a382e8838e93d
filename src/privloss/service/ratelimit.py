"""Per-analyst rate limit: a token bucket (``rate`` per second, depth ``burst``).

Definition
----------
Each key (an analyst, or a client address for failed sign-ins) has a bucket
of ``burst`` tokens refilled at ``rate`` per second; a request takes one
token or is refused (HTTP 429) without touching the ledger or the data.

Privacy guarantee
-----------------
None (availability).  The limit is per process: behind a load balancer with
``n`` processes an analyst gets at most ``n`` times the rate.

Runtime
-------
O(1) per request; at most ``max_keys`` buckets are kept (the oldest dropped).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

__all__ = ["RateLimiter"]


class RateLimiter:
    def __init__(self, rate: float, burst: int, *, max_keys: int = 100_000,
                 clock=time.monotonic):
        if not rate > 0 or burst < 1:
            raise ValueError(f"rate must be > 0 and burst >= 1, got rate={rate!r}, "
                             f"burst={burst!r}")
        self.rate, self.burst, self._max_keys, self._clock = float(rate), int(burst), \
            max_keys, clock
        self._buckets: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key) -> bool:
        """Take one token from ``key``'s bucket; False when it is empty."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            allowed = tokens >= 1.0
            self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
            while len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
        return allowed

    def available(self, key) -> bool:
        """Whether ``key``'s bucket has a token (nothing is taken)."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - last) * self.rate) >= 1.0

    def retry_after(self) -> int:
        """Seconds until one token is back (for the Retry-After header)."""
        return max(1, int(1.0 / self.rate + 0.999))
