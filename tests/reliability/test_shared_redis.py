"""Two sites on one Redis server: each hears only its own channel layer's messages (docs/deployment.md).

Redis publish/subscribe is not scoped to a database number, so two sites on different numbers of one server hear
each other's group messages unless their channels are named apart (KSEEK_CHANNEL_PREFIX, by default one per
site). Runs where REDIS_URL is set (CI's second pass); skipped elsewhere, like the other tests of the Redis layer.
"""

import os

import pytest
import websockets

from tests.reliability.live import LiveSite
from tests.reliability.wire import WireWorker

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL (a Redis server to share)"),
]
# Database numbers of their own: apart from the live sites' (9) and each other, as two teams' sites would be.
SITE_DATABASES = (13, 14)


class SiteOnRedis(LiveSite):
    """A live site whose processes (its daphne and its `django` snippets) use one database number of Redis."""

    def __init__(self, folder, redis_db: int):
        super().__init__(folder)
        self.redis_url = os.environ["REDIS_URL"].rsplit("/", 1)[0] + f"/{redis_db}"

    def env(self, **extra) -> dict:
        return super().env(**{"REDIS_URL": self.redis_url, **extra})


@pytest.fixture
def two_sites(tmp_path):
    sites = [SiteOnRedis(tmp_path / f"site{n}", db) for n, db in enumerate(SITE_DATABASES)]
    try:
        yield [site.setup() for site in sites]
    finally:
        for site in sites:
            site.close()


def closed_code(wire: WireWorker) -> int | None:
    """The code the server closed the socket with (every message before the close is skipped)."""
    try:
        while True:
            wire.recv(timeout=30)
    except websockets.exceptions.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None


def test_revoking_a_host_on_one_site_leaves_the_same_numbered_host_of_another_site_connected(two_sites):
    here, there = two_sites
    ports = [site.start_server() for site in two_sites]
    # Host #2 on both sites: the group its revocation is told through is `worker.2` on each.
    tokens = [[site.worker_token(name) for name in ("first", "second")] for site in two_sites]
    revoked = WireWorker(ports[0], tokens[0][1])
    bystander = WireWorker(ports[1], tokens[1][1])
    try:
        here.django(
            "from runs.models import WorkerHost\nfrom runs.services import worker_host_revoke\n"
            "result = worker_host_revoke(host=WorkerHost.objects.get(name='second')).pk"
        )
        # The revocation went through Redis: the revoked host's socket on its own site is closed ...
        assert closed_code(revoked) == 4401
        # ... and the other site's host #2, whose token nobody revoked, is still served.
        bystander.send({"type": "claim", "v": 1, "gpu": 0})
        assert bystander.recv(timeout=30)["type"] == "no_work"
    finally:
        bystander.close()
    assert there.query("select revoked_at from runs_workerhost where name = 'second'") == [(None,)]
