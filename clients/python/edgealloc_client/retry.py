"""When and how long to wait before trying a claim again. A claim is safe to
repeat only because every attempt carries the same idempotency key: a claim
the server made but whose answer was lost is answered again, not made twice."""

import random
import time

from . import errors

# Refusals after which nothing was taken and a later try may succeed.
ALWAYS_RETRIED = (errors.Overloaded, errors.Unavailable, errors.RateLimited, errors.ConnectionFailed)


class Backoff:
    """Delays for at most `retries` more attempts within `max_total_s` of the
    first: the server's Retry-After when it gives one, else an exponential
    delay from `base_s` capped at `cap_s`; jittered upwards (never below what
    the server asked) so that many clients refused at once do not all come
    back at once."""

    def __init__(self, retries, max_total_s=30.0, base_s=0.1, cap_s=5.0, no_capacity=False,
                 clock=time.monotonic, sleep=time.sleep, rand=random.random):
        self.retries = retries
        self.deadline = clock() + max_total_s
        self.base_s = base_s
        self.cap_s = cap_s
        self.no_capacity = no_capacity
        self.attempt = 0
        self._clock, self._sleep, self._rand = clock, sleep, rand

    def retryable(self, error):
        return isinstance(error, ALWAYS_RETRIED) or (self.no_capacity and isinstance(error, errors.NoCapacity))

    def delay(self, error):
        exponential = min(self.cap_s, self.base_s * (2 ** self.attempt))
        wanted = max(exponential, error.retry_after or 0.0)
        return wanted * (1.0 + 0.25 * self._rand())

    def wait_after(self, error):
        """Sleeps before the next attempt and returns True, or returns False
        when error is final: not retryable, no attempts left, or the wait
        would end past the deadline."""
        if not self.retryable(error) or self.attempt >= self.retries:
            return False
        pause = self.delay(error)
        if self._clock() + pause > self.deadline:
            return False
        self._sleep(pause)
        self.attempt += 1
        return True
