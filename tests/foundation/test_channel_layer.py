"""Events reach browsers through the configured channel layer, and only after their transaction commits."""

import pytest
from channels.db import database_sync_to_async as sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from kseek_site.asgi import application
from runs.services import step_record
from tests.foundation.factories import make_run
from tests.payloads import payload


async def test_a_message_round_trips_through_the_configured_layer():
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add("roundtrip", channel)
    await layer.group_send("roundtrip", {"type": "probe", "n": 7})
    assert (await layer.receive(channel))["n"] == 7
    await layer.group_discard("roundtrip", channel)


def _login_cookie(client, user):
    client.force_login(user)
    return client.cookies["sessionid"].value


async def signed_in_socket(client, path: str, origin: bytes = b"http://localhost") -> WebsocketCommunicator:
    """A feed socket as a signed-in viewer's browser on `origin` would open it (not yet connected)."""
    user = await sync_to_async(get_user_model().objects.create_user)("viewer", password="pw-123456789")
    session = await sync_to_async(_login_cookie)(client, user)
    return WebsocketCommunicator(
        application,
        path,
        headers=[(b"cookie", f"sessionid={session}".encode()), (b"origin", origin), (b"host", b"localhost")],
    )


@pytest.mark.django_db(transaction=True)
async def test_a_signed_in_browser_hears_of_a_stored_step(client):
    run = await sync_to_async(make_run)()
    socket = await signed_in_socket(client, f"/ws/runs/{run.pk}/")
    connected, _ = await socket.connect()
    assert connected
    await sync_to_async(step_record)(run=run, seq=0, kind="note", payload={"text": "hi"})
    message = await socket.receive_json_from(timeout=5)
    assert message == {"type": "step.stored", "run_id": run.pk, "seq": 0, "kind": "note"}
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_an_anonymous_socket_is_refused():
    socket = WebsocketCommunicator(
        application, "/ws/runs/", headers=[(b"origin", b"http://localhost"), (b"host", b"localhost")]
    )
    connected, code = await socket.connect()
    assert not connected


@pytest.mark.django_db(transaction=True)
async def test_a_socket_from_a_foreign_origin_is_refused(client):
    socket = await signed_in_socket(client, "/ws/runs/", origin=b"http://evil.example")
    connected, _ = await socket.connect()
    assert not connected


@pytest.mark.django_db(transaction=True)
async def test_nothing_is_published_for_a_step_whose_transaction_rolls_back(client):
    from django.db import transaction

    run = await sync_to_async(make_run)()
    socket = await signed_in_socket(client, f"/ws/runs/{run.pk}/")
    assert (await socket.connect())[0]

    def record_then_fail():
        with transaction.atomic():
            step_record(run=run, seq=0, kind="note", payload=payload("note"))
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        await sync_to_async(record_then_fail)()
    assert await socket.receive_nothing(timeout=0.5)
    await sync_to_async(step_record)(run=run, seq=1, kind="note", payload=payload("note"))
    assert (await socket.receive_json_from(timeout=5))["seq"] == 1
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_worker_without_an_origin_header_reaches_its_socket_through_the_full_application():
    from runs.services import worker_host_create

    _, token = await sync_to_async(worker_host_create)(name="gpu-node-1")
    socket = WebsocketCommunicator(
        application, "/ws/worker/", headers=[(b"authorization", f"Bearer {token}".encode()), (b"host", b"localhost")]
    )
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to(
        {
            "type": "hello",
            "v": 1,
            "host": "gpu-node-1",
            "gpus": [],
            "targets": ["cpu"],
            "active_runs": [],
            "agentloop_version": "test",
        }
    )
    assert (await socket.receive_json_from(timeout=5))["type"] == "welcome"
    await socket.disconnect()


async def test_the_single_process_layer_drops_a_message_only_for_a_full_member():
    """kseek_site/layers.py: group_send puts a copy on each member's queue; a full queue loses that member's copy
    only (as in channels' own in-memory layer), and each receiver gets its own copy."""
    import asyncio

    from kseek_site.layers import LocalChannelLayer

    layer = LocalChannelLayer(capacity=1)
    slow, quick = await layer.new_channel(), await layer.new_channel()
    for channel in (slow, quick):
        await layer.group_add("members", channel)
    await layer.group_send("members", {"type": "probe", "n": 1, "items": [1]})
    first = await layer.receive(quick)
    first["items"].append(2)  # a receiver's copy is its own
    await layer.group_send("members", {"type": "probe", "n": 2})  # slow's queue is full: its copy is dropped
    assert (await layer.receive(quick))["n"] == 2
    assert await layer.receive(slow) == {"type": "probe", "n": 1, "items": [1]}
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(slow), 0.2)


async def test_the_single_process_layer_still_expires_old_messages(monkeypatch):
    from kseek_site import layers

    layer = layers.LocalChannelLayer(expiry=1)
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "old"})
    clock = layers.time.time() + 5
    monkeypatch.setattr(layers.time, "time", lambda: clock)
    layer._cleaned_at = 0.0  # the once-a-second walk is due
    await layer.send(channel, {"type": "new"})
    assert (await layer.receive(channel))["type"] == "new"


def test_the_single_process_layer_stands_on_channels_public_base_only():
    """kseek_site/layers.py subclasses channels' documented BaseChannelLayer, not its in-memory layer, so that no
    private name of channels can change under it; and it uses no private attribute of channels or asyncio."""
    import ast
    from pathlib import Path

    from channels.layers import BaseChannelLayer, InMemoryChannelLayer

    from kseek_site import layers

    assert BaseChannelLayer in layers.LocalChannelLayer.__mro__
    assert InMemoryChannelLayer not in layers.LocalChannelLayer.__mro__
    tree = ast.parse(Path(layers.__file__).read_text())
    ours = {"_inboxes", "_groups", "_cleaned_at", "_inbox", "_put", "_clean_expired"}
    private = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
    }
    assert private <= ours, private - ours


async def test_the_single_process_layer_keeps_the_group_api():
    """What the feed and worker sockets rely on: a discarded member hears nothing more, a member whose message
    expired unread leaves its groups, flush forgets everything, and names are checked as channels checks them."""
    from kseek_site import layers

    layer = layers.LocalChannelLayer(expiry=60)
    stays, leaves = await layer.new_channel(), await layer.new_channel()
    for channel in (stays, leaves):
        await layer.group_add("run-7", channel)
    await layer.group_discard("run-7", leaves)
    await layer.group_send("run-7", {"type": "probe", "n": 1})
    assert (await layer.receive(stays))["n"] == 1
    await layer.send(leaves, {"type": "direct"})  # a channel's own messages still arrive
    assert (await layer.receive(leaves))["type"] == "direct"
    with pytest.raises(TypeError):
        await layer.group_add("not a valid name!", stays)

    layer.expiry = -1  # a message expires as it is sent
    await layer.send(stays, {"type": "unread"})
    layer._cleaned_at = 0.0  # the once-a-second walk is due
    layer._clean_expired()
    assert stays not in layer._groups.get("run-7", {})
    layer.expiry = 60
    await layer.group_add("run-7", stays)
    await layer.flush()
    await layer.group_send("run-7", {"type": "after flush"})
    import asyncio

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(stays), 0.1)
