import pytest

from exemplars import services


@pytest.fixture(autouse=True)
def _fresh_bank_cache():
    """Each test starts like a freshly started server process (no bank in memory)."""
    services.cache_clear()
    yield
    services.cache_clear()


@pytest.fixture(scope="module", autouse=True)
def _fresh_bank_cache_per_module():
    """Also before a module's shared demo (`demo_loaded`) is written: a bank another
    module built (and rolled back) must not be taken for this module's, whose rows may
    reuse its primary keys on SQLite."""
    services.cache_clear()
    yield
    services.cache_clear()
