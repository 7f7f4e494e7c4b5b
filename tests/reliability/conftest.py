import pytest

from tests.reliability.live import LiveSite


@pytest.fixture
def site(tmp_path):
    """A migrated site with the harness's tasks; its servers and workers are killed at the end."""
    live = LiveSite(tmp_path).setup()
    try:
        yield live
    finally:
        live.close()
