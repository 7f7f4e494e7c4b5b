"""Bad input on the worker socket: generated messages (hypothesis) and the named cases of issue 7. Each gets a
clear answer (error, or nack with its reason; never a nack "for retry", which would mean a fault of ours), the
socket stays up, and nothing is half-written: the stored rows are exactly those acknowledged, with totals that
count them once and no question, kernel or evaluation whose event was refused."""

import json
from datetime import UTC, datetime

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async as sync_to_async  # closes its connection: PostgreSQL test databases drop
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kseek_site.serving import EVENT_MAX_BYTES, MESSAGE_MAX_BYTES
from runs.models import Evaluation, Kernel, Question, RefusedEvent, Run, Step
from runs.services import hello_gpus, hello_targets, run_claim
from tests.dashboard.helpers import connected_worker, evaluation_payload, make_worker, question_payload, worker_socket
from tests.foundation.factories import make_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

KINDS = ["note", "status", "evaluation", "question_proposed", "question_decided", "tool_result", "usage"]
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.just("nul \x00 inside"),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


def event_messages(run_id: int, other_run_id: int):
    """Mostly well-formed envelopes with one or more fields replaced by something wrong."""
    good_payloads = st.sampled_from(
        [
            {"text": "hi"},
            evaluation_payload(1.3),
            evaluation_payload(None, correct=False),
            question_payload("q-gen"),
            {"status": "running", "reason": "resumed"},
            {"question_ref": "q-gen", "action": "approve", "by": "timeout"},
        ]
    )
    return st.fixed_dictionaries(
        {
            "type": st.sampled_from(["event", "event", "event", "claim", "directive_ack", "hello", "dance", None]),
            "v": st.sampled_from([1, 1, 1, 2, "1", None]),
            "run_id": st.one_of(
                st.just(run_id), st.just(run_id), st.just(other_run_id), st.just(10**9), st.just(str(run_id)), json_leaf
            ),
            "seq": st.one_of(
                st.integers(0, 12), st.integers(0, 12), st.integers(-5, -1), st.just(2**31), st.just(2**64), json_leaf
            ),
            "kind": st.one_of(st.sampled_from(KINDS), st.text(max_size=12), json_leaf),
            "ts": st.one_of(
                st.just("2026-11-30T12:00:00+00:00"), st.just("2026-13-45T99:00:00"), st.text(max_size=30), json_leaf
            ),
            "payload": st.one_of(
                good_payloads, good_payloads, st.dictionaries(st.text(max_size=8), json_value, max_size=4), json_value
            ),
            "usage": st.one_of(
                st.just({"tokens_in": 0, "tokens_out": 0, "cost_usd": 0}),
                st.just({"tokens_in": 3, "tokens_out": 4, "cost_usd": 0.01}),  # counted on a usage event only
                st.fixed_dictionaries({"tokens_in": json_leaf, "tokens_out": json_leaf, "cost_usd": json_leaf}),
                json_value,
            ),
            "id": json_leaf,
        }
    ).map(lambda m: {k: v for k, v in m.items() if v is not None or k in ("payload", "usage")})


def batch_messages(run_id: int, other_run_id: int):
    """`events` messages: mostly a list of generated envelopes (each as `event_messages` makes them, so some are
    wrong inside), sometimes something that is not a list of objects at all."""
    generated = event_messages(run_id, other_run_id).map(
        lambda m: {k: v for k, v in m.items() if k not in ("type", "v")}
    )
    # Well-formed notes at seqs the generated events rarely reach, so that some events of a batch are stored.
    fresh = st.integers(13, 10**6).map(
        lambda seq: {k: v for k, v in note(run_id, seq, f"batched {seq}").items() if k not in ("type", "v")}
    )
    envelopes = st.one_of(generated, generated, fresh)
    return st.fixed_dictionaries(
        {
            "type": st.just("events"),
            "v": st.sampled_from([1, 1, 1, 2]),
            "events": st.one_of(
                st.lists(envelopes, min_size=1, max_size=5),
                st.lists(envelopes, min_size=1, max_size=5),
                st.lists(st.one_of(envelopes, json_leaf), min_size=1, max_size=3),
                json_value,
            ),
        }
    )


def answers_expected(frame) -> int:
    """How many answers a frame gets: one per event of a readable `events` message (an entry of `acks` or a
    nack); a `hello`, its `welcome` and an `error` for each of its `targets` the server cannot serve (docs/protocol.md
    2.9) and its `gpus` it cannot read (2.2); otherwise one reply."""
    if isinstance(frame, dict) and frame.get("type") == "events" and frame.get("v") == 1:
        items = frame.get("events")
        if isinstance(items, list) and 0 < len(items) <= 1000 and all(isinstance(i, dict) for i in items):
            return len(items)
    if isinstance(frame, dict) and frame.get("type") == "hello" and frame.get("v") == 1 and frame.get("v") is not True:
        problems = (hello_targets(frame.get("targets"))[1], hello_gpus(frame.get("gpus"))[1])
        return 1 + sum(problem is not None for problem in problems)
    return 1


raw_frames = st.one_of(
    st.text(max_size=200),
    st.just("[" * 100_000 + "]" * 100_000),
    st.just('{"type": "event", "v": 1'),
    st.binary(max_size=200),
    json_value.map(json.dumps),
)


async def exchange(token: str, frames: list) -> list[dict]:
    """Each frame, and then its answers, before the next frame. One at a time: the test database is SQLite in
    memory with a shared cache, where a write that meets another connection's open write fails at once (no busy
    timeout), so a claim handled while the event writer commits a batch would fail for a reason of the test's."""
    socket = await connected_worker(token)
    replies = []
    for frame in frames:
        # Straight onto the ASGI queue, as daphne would put it: the communicator refuses empty frames itself.
        if isinstance(frame, bytes):
            await socket.input_queue.put({"type": "websocket.receive", "bytes": frame})
        else:
            text = frame if isinstance(frame, str) else json.dumps(frame)
            await socket.input_queue.put({"type": "websocket.receive", "text": text})
        answers = []
        while len(answers) < answers_expected(frame):
            reply = await socket.receive_json_from(timeout=20)
            if reply["type"] == "acks":  # one answer for each event it lists
                assert reply["acks"], reply
                answers += [
                    {"type": "ack", "run_id": run_id, "seq": seq, "in_acks": True} for run_id, seq in reply["acks"]
                ]
            else:
                answers.append(reply)
        assert len(answers) == answers_expected(frame), (frame, answers)
        replies += answers
    # Still up and answering.
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert (await socket.receive_json_from(timeout=20))["type"] in ("no_work", "assign")
    await socket.disconnect()
    return replies


def assert_nothing_half_written(run, acked: dict):
    steps = {s.seq: s for s in Step.objects.filter(run=run)}
    assert set(steps) == set(acked), (sorted(steps), sorted(acked))
    run = Run.objects.get(pk=run.pk)
    assert run.step_count == len(steps)
    assert run.last_seq == max(steps, default=-1)
    assert run.tokens_in == sum(s.tokens_in for s in steps.values())
    assert Question.objects.filter(run=run).count() == sum(
        s.kind == "question_proposed" and bool(s.payload.get("text")) for s in steps.values()
    )
    assert not Question.objects.filter(run=run, step__isnull=True).exists()
    assert Evaluation.objects.filter(run=run).count() == sum(s.kind == "evaluation" for s in steps.values())
    assert Kernel.objects.filter(run=run, step__isnull=True).count() == 0


def test_generated_bad_messages_get_clear_answers_and_leave_only_what_was_acknowledged():
    host, token = make_worker("gpu-a")
    other_host, _ = make_worker("gpu-b")
    run = make_run()
    run_claim(worker=host)
    other = make_run()
    run_claim(worker=other_host)
    acked: dict[int, tuple] = {}
    acked_in_batches = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        st.lists(
            st.one_of(event_messages(run.pk, other.pk), batch_messages(run.pk, other.pk), raw_frames),
            min_size=1,
            max_size=6,
        )
    )
    # Always among the examples: a batch of a well-formed event, one refused inside, and one for another's run.
    @example(
        [
            {
                "type": "events",
                "v": 1,
                "events": [
                    {k: v for k, v in note(run_id, seq, text).items() if k not in ("type", "v")}
                    for run_id, seq, text in (
                        (run.pk, 10**7, "kept"),
                        (run.pk, -1, "bad seq"),
                        (other.pk, 0, "not mine"),
                    )
                ],
            }
        ]
    )
    def check(frames):
        replies = async_to_sync(exchange)(token, frames)
        for reply in replies:
            # "assign": a generated hello that does not list the run hands an unstarted run back to the queue
            # (runs.services.worker_runs_reconcile), and a generated claim then gets it again.
            assert reply["type"] in ("ack", "nack", "error", "welcome", "no_work", "assign"), reply
            if reply["type"] == "nack":
                assert reply["retry"] is False and reply["error"], reply
            if reply["type"] == "error":
                assert reply["error"], reply
            if reply["type"] == "ack":
                assert reply["run_id"] == run.pk, reply
                acked[reply["seq"]] = True
                if reply.get("in_acks"):
                    acked_in_batches.append(reply["seq"])
        assert_nothing_half_written(run, acked)
        assert not Step.objects.filter(run=other).exists()

    check()
    assert acked, "no generated event was well-formed: the test checked refusals only"
    assert acked_in_batches, "no generated batch held a well-formed event: batches were checked for refusals only"


def note(run_id, seq, text="n", **fields):
    return {
        "type": "event",
        "v": 1,
        "run_id": run_id,
        "seq": seq,
        "kind": "note",
        "ts": datetime(2026, 11, 30, tzinfo=UTC).isoformat(),
        "payload": {"text": text},
        "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
        **fields,
    }


async def test_sequence_numbers_that_skip_go_backwards_and_repeat_are_stored_once_each():
    host, token = await sync_to_async(make_worker)()
    run = await sync_to_async(make_run)()
    await sync_to_async(run_claim)(worker=host)
    socket = await connected_worker(token)
    for seq, text in [(0, "a"), (5, "f"), (2, "c"), (5, "f"), (2, "C!"), (1, "b")]:
        await socket.send_json_to(note(run.pk, seq, text))
    replies = [await socket.receive_json_from(timeout=10) for _ in range(6)]
    assert [(r["type"], r["seq"]) for r in replies] == [
        ("ack", 0),
        ("ack", 5),
        ("ack", 2),
        ("ack", 5),
        ("nack", 2),
        ("ack", 1),
    ]
    assert "different" in replies[4]["error"] and replies[4]["retry"] is False
    steps = await sync_to_async(list)(Step.objects.filter(run=run).values_list("seq", "payload"))
    assert steps == [(0, {"text": "a"}), (1, {"text": "b"}), (2, {"text": "c"}), (5, {"text": "f"})]
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.step_count, stored.last_seq) == (4, 5)
    await socket.disconnect()


async def test_an_oversize_event_is_refused_for_good_with_its_size_kept_on_the_run_and_the_socket_stays_up():
    host, token = await sync_to_async(make_worker)()
    run = await sync_to_async(make_run)()
    await sync_to_async(run_claim)(worker=host)
    socket = await connected_worker(token)
    await socket.send_json_to(note(run.pk, 0, "x" * (EVENT_MAX_BYTES + 1000)))
    reply = await socket.receive_json_from(timeout=10)
    assert reply["type"] == "nack" and reply["retry"] is False and f"limit of {EVENT_MAX_BYTES}" in reply["error"], (
        reply
    )
    refused = await sync_to_async(RefusedEvent.objects.get)(run=run, seq=0)
    assert refused.kind == "note" and refused.size_bytes > EVENT_MAX_BYTES and "limit" in refused.error
    await socket.send_json_to(note(run.pk, 0, "small"))
    assert (await socket.receive_json_from(timeout=10))["type"] == "ack"
    await socket.disconnect()


async def test_a_batch_over_the_message_limit_is_refused_whole_and_one_over_the_event_limit_is_read_event_by_event():
    host, token = await sync_to_async(make_worker)()
    run = await sync_to_async(make_run)()
    await sync_to_async(run_claim)(worker=host)
    socket = await connected_worker(token)

    def batch(*sized):
        return {
            "type": "events",
            "v": 1,
            "events": [
                {k: v for k, v in note(run.pk, seq, "x" * size).items() if k not in ("type", "v")}
                for seq, size in sized
            ],
        }

    # Over the message limit (daphne would drop it; behind another server this answers): nothing of it is read.
    await socket.send_json_to(batch((0, MESSAGE_MAX_BYTES // 2), (1, MESSAGE_MAX_BYTES // 2 + 10)))
    reply = await socket.receive_json_from(timeout=10)
    assert reply["type"] == "error" and "limit" in reply["error"] and "none of it was read" in reply["error"]
    assert await socket.receive_nothing(timeout=0.5)
    assert not await sync_to_async(Step.objects.filter(run=run).exists)()
    # Within the message limit but over the event limit: each event is judged alone.
    await socket.send_json_to(batch((0, EVENT_MAX_BYTES + 10), (1, 100), (2, EVENT_MAX_BYTES // 2)))
    replies = [await socket.receive_json_from(timeout=10) for _ in range(2)]
    nack = next(r for r in replies if r["type"] == "nack")
    assert (nack["seq"], nack["retry"]) == (0, False) and "limit" in nack["error"]
    assert next(r for r in replies if r["type"] == "acks")["acks"] == [[run.pk, 1], [run.pk, 2]]
    stored = await sync_to_async(list)(Step.objects.filter(run=run).values_list("seq", flat=True))
    assert stored == [1, 2]
    await socket.disconnect()


@pytest.mark.parametrize("header", [None, "Bearer ", "Bearer kst_wrong", "Basic a2V5", "bearer"])
async def test_a_missing_or_wrong_token_is_refused_at_the_handshake(header):
    await sync_to_async(make_worker)()
    socket = worker_socket(None)
    if header is not None:
        socket.scope["headers"].append((b"authorization", header.encode()))
    connected, _ = await socket.connect()
    assert not connected  # daphne answers such a handshake with HTTP 403 (test_wire_contract.py, real daphne)
