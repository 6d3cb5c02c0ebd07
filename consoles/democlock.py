"""A clock for demo data only: `with demo_clock(moment):` runs the services as
if it were `moment`, so the demo's history (decisions, labels, gold labels,
plans) is spread over past days and the overview's charts have a shape.

Every timestamp the services and `auto_now_add` fields write comes from
`django.utils.timezone.now()`, which this swaps for the duration of the block.
It is used by the demo loaders (`manage.py load_demo`, one thread) and never
by a request or a command that serves real data.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from django.utils import timezone


@contextmanager
def demo_clock(moment: datetime) -> Iterator[None]:
    if timezone.is_naive(moment):
        raise ValueError("demo_clock needs an aware datetime")
    original = timezone.now
    timezone.now = lambda: moment
    try:
        yield
    finally:
        timezone.now = original
