import pytest

from exemplars import services


@pytest.fixture(autouse=True)
def _fresh_bank_cache():
    """Each test starts like a freshly started server process (no bank in memory)."""
    services.cache_clear()
    yield
    services.cache_clear()
