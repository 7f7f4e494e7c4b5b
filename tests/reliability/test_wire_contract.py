"""docs/protocol.md section 2 as a client written from it sees it: real daphne, started as `make run` starts it,
spoken to by hand (tests/reliability/wire.py) and by the real worker (`python -m agentloop worker`)."""

import json
import time
import urllib.request

import pytest
import websockets
from websockets.sync.client import connect

from agentloop.protocol import event_message_bytes
from kseek_site.serving import EVENT_MAX_BYTES, MESSAGE_MAX_BYTES
from tests.reliability.live import wait_until
from tests.reliability.wire import WireWorker, note_event

pytestmark = pytest.mark.timeout(300)


def sized_note(run_id: int, seq: int, size: int) -> dict:
    """A note event whose `event` message is exactly `size` bytes by the protocol's measure (compact, UTF-8:
    agentloop.protocol.event_message_bytes)."""
    message = note_event(run_id, seq)
    message["payload"]["text"] = ""
    message["payload"]["text"] = "x" * (size - event_message_bytes(message))
    assert event_message_bytes(message) == size
    return message


def test_a_wrong_token_is_refused_at_the_handshake_with_http_403(site):
    port = site.start_server()
    site.worker_token("gpu-a")
    for header in ({}, {"Authorization": "Bearer kst_wrong"}):
        with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
            with connect(f"ws://127.0.0.1:{port}/ws/worker/", additional_headers=header, open_timeout=10):
                pass
        assert refused.value.response.status_code == 403


def test_nothing_before_hello_is_acted_on_and_binary_frames_are_refused(site):
    port = site.start_server()
    token = site.worker_token("gpu-a")
    run_id = site.queue_demo_run()
    with connect(
        f"ws://127.0.0.1:{port}/ws/worker/", additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=10
    ) as ws:
        for before in ({"type": "claim", "v": 1, "gpu": 0}, note_event(run_id, 0)):
            ws.send(json.dumps(before))
            reply = json.loads(ws.recv(timeout=10))
            assert reply["type"] == "error" and "hello first" in reply["error"], reply
        ws.send(b'{"type": "hello", "v": 1}')
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "error" and "text frame" in reply["error"], reply
        ws.send(json.dumps({"type": "hello", "v": 1, "host": "h", "gpus": [], "targets": ["cpu"], "active_runs": []}))
        welcome = json.loads(ws.recv(timeout=10))
        assert welcome["type"] == "welcome"
        assert welcome["limits"] == {"message_bytes": MESSAGE_MAX_BYTES, "event_bytes": EVENT_MAX_BYTES}
        ws.send(json.dumps({"type": "claim", "v": 1}))  # `gpu` is optional: the server does not read it
        assert json.loads(ws.recv(timeout=10))["type"] == "assign"
    assert site.query("select count(*) from runs_step where run_id = ?", (run_id,))[0][0] == 0


def test_the_largest_event_is_stored_the_next_byte_is_refused_for_good_and_later_events_still_arrive(site):
    port = site.start_server()
    worker = WireWorker(port, site.worker_token("gpu-a"))
    site.queue_demo_run()
    run_id = worker.claim()
    # The audit's case first: an evaluation of a 600 KB kernel (its source once, in the result).
    kernel = "// " + "x" * 600_000 + "\n"
    result = {
        "status": "correct",
        "reason": None,
        "kernel_source": kernel,
        "kernel_sha256": "",
        "scenarios": [],
        "geomean": {},
        "host": "wire",
        "device_name": "cpu",
    }
    evaluation = note_event(run_id, 0) | {
        "kind": "evaluation",
        "payload": {"purpose": "tool", "scenario_set": "quick", "kernel_path": "kernel.cpp", "result": result},
    }
    worker.send(evaluation)
    assert worker.replies_for(1)[0]["type"] == "ack"
    worker.send(sized_note(run_id, 1, EVENT_MAX_BYTES))
    worker.send(sized_note(run_id, 2, EVENT_MAX_BYTES + 1))
    worker.send(sized_note(run_id, 3, MESSAGE_MAX_BYTES - 1024))
    worker.send(note_event(run_id, 4))
    replies = {reply["seq"]: reply for reply in worker.replies_for(4)}
    assert replies[1]["type"] == "ack" and replies[4]["type"] == "ack", replies
    for seq in (2, 3):
        assert replies[seq]["type"] == "nack" and replies[seq]["retry"] is False
        assert f"over the server's limit of {EVENT_MAX_BYTES} bytes" in replies[seq]["error"]
    worker.close()
    assert [seq for (seq,) in site.query("select seq from runs_step where run_id = ? order by seq", (run_id,))] == [
        0,
        1,
        4,
    ]
    refused = site.query("select seq, kind, size_bytes from runs_refusedevent where run_id = ? order by seq", (run_id,))
    assert refused == [(2, "note", EVENT_MAX_BYTES + 1), (3, "note", MESSAGE_MAX_BYTES - 1024)]


def utf8_note(run_id: int, seq: int, size: int) -> dict:
    """A note of 700,000 "é" and ASCII padding whose `event` message is `size` bytes by the protocol's one measure
    (compact, UTF-8: agentloop.protocol.event_message_bytes); sent as json.dumps spells it (spaces, every "é" as
    \\u00e9) its frame is about 7 MB."""
    message = note_event(run_id, seq, "é" * 700_000)
    message["payload"]["text"] += "x" * (size - event_message_bytes(message))
    assert event_message_bytes(message) == size
    return message


def test_an_event_counts_the_same_bytes_alone_and_in_a_batch_however_it_is_spelled(site):
    """protocol.md 2.1: an event's size is its `event` message's, compact in UTF-8, alone or inside `events`. The
    audit's case: a non-ASCII event stored alone was refused inside a batch over 4 MiB, re-measured there with
    escapes and spaces."""
    port = site.start_server()
    worker = WireWorker(port, site.worker_token("gpu-a"))
    site.queue_demo_run()
    run_id = worker.claim()

    def batch(*events: dict) -> dict:
        return {
            "type": "events",
            "v": 1,
            "events": [{k: v for k, v in e.items() if k not in ("type", "v")} for e in events],
        }

    worker.send(batch(utf8_note(run_id, 0, EVENT_MAX_BYTES), note_event(run_id, 1)))
    assert sorted(map(tuple, worker.recv()["acks"])) == [(run_id, 0), (run_id, 1)]
    worker.send(batch(utf8_note(run_id, 2, EVENT_MAX_BYTES + 1), note_event(run_id, 3)))
    worker.send(utf8_note(run_id, 4, EVENT_MAX_BYTES + 1))
    worker.send(utf8_note(run_id, 5, EVENT_MAX_BYTES))
    replies = []
    while len(replies) < 4:
        reply = worker.recv(60)
        replies += [{"type": "ack", "seq": seq} for _, seq in reply["acks"]] if reply["type"] == "acks" else [reply]
    by_seq = {reply["seq"]: reply for reply in replies}
    assert by_seq[3]["type"] == by_seq[5]["type"] == "ack", replies
    for seq in (2, 4):
        assert by_seq[seq]["type"] == "nack" and by_seq[seq]["retry"] is False, by_seq[seq]
        assert f"an event of {EVENT_MAX_BYTES + 1} bytes is over the server's limit" in by_seq[seq]["error"]
    worker.close()
    stored = site.query("select seq from runs_step where run_id = ? order by seq", (run_id,))
    assert [seq for (seq,) in stored] == [0, 1, 3, 5]


def test_revoking_a_connected_worker_ends_its_connection_and_refuses_it_while_its_run_says_why(site, tmp_path):
    port = site.start_server()
    token = site.worker_token("gpu-revoked")
    run_id = site.queue_demo_run()
    state_dir = tmp_path / "worker"
    worker = site.start_worker(port, token, state_dir)
    assert wait_until(
        lambda: site.query("select step_count from runs_run where id = ?", (run_id,))[0][0] > 0, 120, while_alive=worker
    ), site.worker_log(state_dir)
    revoked_at = time.monotonic()
    site.django(
        "from runs.models import WorkerHost\nfrom runs.services import worker_host_revoke\n"
        "result = str(worker_host_revoke(host=WorkerHost.objects.get(name='gpu-revoked')).revoked_at)"
    )
    # The worker hears 4401 on its open socket and stops (exit status 3: its token is refused).
    assert worker.wait(timeout=30) == 3, site.worker_log(state_dir)
    assert time.monotonic() - revoked_at < 30
    assert "refused the worker token" in site.worker_log(state_dir)
    steps_then = site.query("select step_count from runs_run where id = ?", (run_id,))[0][0]
    # Its next handshake is refused, and a run queued now is nobody's.
    with pytest.raises(websockets.exceptions.InvalidStatus):
        with connect(
            f"ws://127.0.0.1:{port}/ws/worker/",
            additional_headers={"Authorization": f"Bearer {token}"},
            open_timeout=10,
        ):
            pass
    queued = site.queue_demo_run()
    time.sleep(1)
    assert site.query("select status, worker_id from runs_run where id = ?", (queued,))[0] == ("queued", None)
    assert site.query("select step_count from runs_run where id = ?", (run_id,))[0][0] == steps_then
    # Its run is held by a host that went away, and its page says why.
    assert wait_until(
        lambda: site.query("select connection from runs_workerhost where name = 'gpu-revoked'")[0][0] == "", 10
    )
    session = site.session_for("olive", "viewer")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/runs/{run_id}/", headers={"Cookie": f"sessionid={session}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert "its token was revoked" in response.read().decode()


def test_an_event_without_its_time_is_refused_for_good_not_acked_as_a_duplicate(site):
    port = site.start_server()
    token = site.worker_token("gpu-ts")
    site.queue_demo_run()
    wire = WireWorker(port, token)
    try:
        run_id = wire.claim()
        stored = note_event(run_id, 0, "the first note")
        wire.send(stored)
        assert wire.replies_for(1)[0]["type"] == "ack"
        timeless = {k: v for k, v in stored.items() if k != "ts"}
        for resent in (timeless, {**stored, "ts": None}, {**timeless, "seq": 1}):
            wire.send(resent)
            [reply] = wire.replies_for(1)
            assert reply["type"] == "nack" and reply["retry"] is False, reply
            assert "ts is missing" in reply["error"], reply
    finally:
        wire.close()
    assert site.query("select seq from runs_step where run_id = ?", (run_id,)) == [(0,)]


def closed_with(wire: WireWorker) -> tuple[int | None, list[dict]]:
    """What the server sent until it closed the socket: the close code and the messages before it."""
    messages = []
    try:
        while True:
            messages.append(wire.recv(timeout=10))
    except websockets.exceptions.ConnectionClosed as closed:
        return (closed.rcvd.code if closed.rcvd else None), messages


@pytest.mark.parametrize("first", ["hello", "directive_ack"])
def test_a_host_revoked_from_another_process_is_closed_at_its_next_hello_or_ack_not_welcomed(site, first):
    # One daphne with the in-memory layer: the revocation's message from another process cannot reach its socket.
    # (One socket a case: a host has one live socket, a second would replace the first, 2.1.)
    port = site.start_server(REDIS_URL="")
    token = site.worker_token("gpu-late")
    site.queue_demo_run()
    wire = WireWorker(port, token)
    run_id = wire.claim()
    directive = site.django(
        "from runs.models import Run, WorkerHost\nfrom runs.services import directive_send, worker_host_revoke\n"
        "directive = directive_send(run=Run.objects.get(pk=run_id), action='pause')\n"
        "worker_host_revoke(host=WorkerHost.objects.get(name='gpu-late'))\nresult = directive.wire_id",
        run_id=run_id,
    )
    if first == "hello":
        wire.send({"type": "hello", "v": 1, "host": "wire", "gpus": ["cpu"], "targets": ["cpu"], "active_runs": []})
    else:
        wire.send({"type": "directive_ack", "v": 1, "id": directive})
    code, messages = closed_with(wire)
    assert code == 4401 and messages == [], (code, messages)
    # Nothing it sent was acted on: no reconcile took its run back, and the directive waits unacknowledged.
    assert site.query("select status, worker_id is not null from runs_run where id = ?", (run_id,)) == [("running", 1)]
    assert site.query("select acked_at from runs_directive where run_id = ?", (run_id,)) == [(None,)]


def test_a_second_socket_of_a_hosts_token_replaces_the_first_and_the_real_worker_stops(site, tmp_path):
    """docs/protocol.md 2.1: a host has one live socket. The real worker never opens a second one itself (it
    reconnects after its socket is gone); a socket opened beside it with its token (a second worker) replaces
    its socket, which closes with 4409, and it stops (exit status 6) rather than take the host back."""
    port = site.start_server()
    token = site.worker_token("gpu-twice")
    run_id = site.queue_demo_run()
    state_dir = tmp_path / "worker"
    worker = site.start_worker(port, token, state_dir)
    assert wait_until(
        lambda: site.query("select step_count from runs_run where id = ?", (run_id,))[0][0] > 0, 120, while_alive=worker
    ), site.worker_log(state_dir)
    second = WireWorker(port, token)
    try:
        assert worker.wait(timeout=30) == 6, site.worker_log(state_dir)
        assert "replaced this worker's (close 4409)" in site.worker_log(state_dir)
        # The newest socket's hello is the host's word: it holds no run, so the worker's run is lost there.
        assert site.query("select status from runs_run where id = ?", (run_id,)) == [("failed",)]
        connected = "select connection != '' from runs_workerhost where name = 'gpu-twice'"
        assert site.query(connected) == [(1,)]
    finally:
        second.close()
    assert wait_until(lambda: site.query(connected) == [(0,)], 10)
