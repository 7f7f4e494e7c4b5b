"""The sender window (agentloop/worker/window.py): when the worker puts events on the wire, and how many per frame."""

import json

import pytest

from agentloop.protocol import EVENT_MAX_DEPTH
from agentloop.worker.window import SenderWindow


def note(seq, run_id=7, text=None):
    return {
        "run_id": run_id,
        "seq": seq,
        "kind": "note",
        "ts": "2026-11-30T12:00:00+00:00",
        "payload": {"text": text or f"note {seq}"},
        "usage": {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0},
    }


def wire(frame) -> dict:
    return json.loads(frame.text())


def seqs(frame) -> list[int]:
    message = wire(frame)
    return [message["seq"]] if message["type"] == "event" else [e["seq"] for e in message["events"]]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_an_idle_window_sends_an_event_at_once_in_an_events_message():
    window = SenderWindow(max_frames=1)
    frames = window.offer(note(0))
    assert len(frames) == 1
    assert wire(frames[0]) == {"type": "events", "v": 1, "events": [note(0)]}


def test_events_offered_while_a_frame_is_in_flight_wait_and_go_together_when_it_is_answered():
    window = SenderWindow(max_frames=1)
    assert seqs(window.offer(note(0))[0]) == [0]
    assert window.offer(note(1)) == [] and window.offer(note(2), note(3)) == []
    assert window.unsettled == 4 and window.frames_in_flight == 1
    released = window.settle(7, 0)
    assert [seqs(f) for f in released] == [[1, 2, 3]]
    # Answers for part of a frame keep its place; the last one frees it.
    window.offer(note(4))
    assert window.settle(7, 1) == [] and window.settle("7", 3) == []
    assert [seqs(f) for f in window.settle(7, 2)] == [[4]]


def test_two_frames_in_flight_send_the_second_event_at_once_too():
    window = SenderWindow(max_frames=2)
    assert [seqs(f) for f in window.offer(note(0))] == [[0]]
    assert [seqs(f) for f in window.offer(note(1))] == [[1]]
    assert window.offer(note(2)) == []
    assert [seqs(f) for f in window.settle(7, 1)] == [[2]]


def test_a_frame_holds_at_most_max_events_and_max_bytes_and_an_oversize_event_goes_alone_as_event():
    window = SenderWindow(max_frames=1, max_events=3, max_bytes=1000)
    window.offer(note(0))
    window.offer(*(note(seq) for seq in range(1, 6)), note(6, text="x" * 2000), note(7))
    assert [seqs(f) for f in window.settle(7, 0)] == [[1, 2, 3]]
    assert [seqs(f) for f in window.settle(7, 1) + window.settle(7, 2) + window.settle(7, 3)] == [[4, 5]]
    big = window.settle(7, 4) + window.settle(7, 5)
    assert len(big) == 1 and wire(big[0])["type"] == "event" and wire(big[0])["seq"] == 6
    assert wire(big[0]) == {"type": "event", "v": 1, **note(6, text="x" * 2000)}
    assert [seqs(f) for f in window.settle(7, 6)] == [[7]]

    small = SenderWindow(max_frames=1, max_events=100, max_bytes=400)
    small.offer(note(0))
    small.offer(*(note(seq) for seq in range(1, 10)))
    sizes = []
    frames = small.settle(7, 0)
    while frames:
        sizes.append(len(frames[0].text()))
        frames = [f for seq in seqs(frames[0]) for f in small.settle(7, seq)]
    assert len(sizes) > 1 and all(size <= 400 + 40 for size in sizes)


def test_without_batching_every_event_goes_at_once_in_its_own_event_message():
    window = SenderWindow(batching=False)
    frames = [f for seq in range(3) for f in window.offer(note(seq))]
    assert [wire(f)["type"] for f in frames] == ["event"] * 3 and [seqs(f) for f in frames] == [[0], [1], [2]]
    assert window.settle(7, 1) == []


def test_an_event_waiting_or_in_flight_is_not_queued_twice_and_a_late_answer_drops_a_waiting_copy():
    window = SenderWindow(max_frames=1)
    window.offer(note(0))
    assert window.offer(note(0), note(1), note(1)) == []
    assert window.unsettled == 2
    # An answer for an event that waits (a re-sent copy was answered already) drops it.
    window.settle(7, 1)
    assert window.settle(7, 0) == [] and window.unsettled == 0


def test_an_unanswered_frame_expires_and_frees_its_place():
    clock = Clock()
    window = SenderWindow(max_frames=1, clock=clock)
    window.offer(note(0))
    window.offer(note(1))
    clock.now += 10
    assert window.expire(15) == []
    clock.now += 6
    assert [seqs(f) for f in window.expire(15)] == [[1]]
    # The expired event is no longer held: offering it again (the spool's re-send) sends it.
    assert not window.holds(("7", 0))
    window.offer(note(0))
    assert [seqs(f) for f in window.settle(7, 1)] == [[0]]


def test_after_a_reset_the_spool_offered_again_goes_out_in_order_in_one_frame():
    window = SenderWindow(max_frames=1)
    window.offer(note(0))
    window.offer(note(1), note(2))
    window.reset()
    assert window.unsettled == 0 and window.frames_in_flight == 0
    spool = [note(seq, run_id=run) for run in (7, 8) for seq in range(3)]
    frames = window.offer(*spool)
    assert len(frames) == 1
    assert [(e["run_id"], e["seq"]) for e in wire(frames[0])["events"]] == [
        (7, 0),
        (7, 1),
        (7, 2),
        (8, 0),
        (8, 1),
        (8, 2),
    ]


def test_a_window_needs_room_for_a_frame():
    with pytest.raises(ValueError):
        SenderWindow(max_frames=0)


def test_an_event_whose_event_message_is_over_the_servers_limit_is_refused_not_sent_and_the_rest_goes_on():
    from agentloop.worker.window import Limits

    window = SenderWindow(max_frames=1, limits=Limits(message_bytes=2000, event_bytes=1000))
    empty = len(json.dumps(note(2, text="y"), separators=(",", ":"))) - 1
    # Too large for an `events` message (2000 bytes with its envelope), small enough for an `event` message.
    big, fits = note(1, text="x" * 2000), note(2, text="y" * (1970 - empty))
    frames = window.offer(note(0), big, fits)
    assert [seqs(f) for f in frames] == [[0]]
    ((key, why),) = window.take_refused()
    size = len(json.dumps({"type": "event", "v": 1, **big}, separators=(",", ":")))
    assert (
        key == ("7", 1)
        and why == f"not sent: its event message of {size} bytes is over the server's message limit of 2000 bytes"
    )
    assert window.take_refused() == [] and not window.holds(("7", 1))
    # An event over the batch budget but within the limit goes alone, as `event`, and stays within the limit.
    (alone,) = window.settle(7, 0)
    assert wire(alone) == {"type": "event", "v": 1, **fits} and len(alone.text()) <= 2000


def test_a_batch_stays_within_the_servers_message_limit_when_that_is_below_256_kib():
    from agentloop.worker.window import Limits

    window = SenderWindow(max_frames=1, limits=Limits(message_bytes=1500, event_bytes=1500))
    window.offer(note(0))
    window.offer(*(note(seq, text="z" * 100) for seq in range(1, 40)))
    sizes, frames = [], window.settle(7, 0)
    while frames:
        sizes.append(len(frames[0].text()))
        frames = [f for seq in seqs(frames[0]) for f in window.settle(7, seq)]
    assert len(sizes) > 3 and max(sizes) <= 1500 and max(sizes) > 1200


def test_the_limits_come_from_the_welcome_and_an_older_or_garbled_welcome_gets_1_mib():
    from agentloop.worker.window import Limits

    assert Limits.from_welcome({"type": "welcome"}) == (Limits(2**20, 2**20), None)
    assert Limits.from_welcome({"limits": {"message_bytes": 8 * 2**20, "event_bytes": 4 * 2**20}}) == (
        Limits(8 * 2**20, 4 * 2**20),
        None,
    )
    assert Limits.from_welcome({"limits": {"message_bytes": 2**20, "event_bytes": 2**30}})[0] == Limits(2**20, 2**20)
    for garbled in (
        None,
        [],
        {"message_bytes": "8 MiB", "event_bytes": 1},
        {"message_bytes": 0, "event_bytes": 0},
        {"message_bytes": True, "event_bytes": True},
        {"event_bytes": 2**22},
    ):
        limits, problem = Limits.from_welcome({"limits": garbled})
        assert limits == Limits(2**20, 2**20) and problem.startswith("the welcome's limits are not")
    assert SenderWindow().limits == Limits(2**20, 2**20) and SenderWindow().max_bytes == 256 * 1024


@pytest.mark.parametrize("levels", [EVENT_MAX_DEPTH - 1, 2000])
def test_an_event_nested_deeper_than_every_reader_takes_is_refused_not_sent_and_the_rest_goes_on(levels):
    # The server refuses an event past 64 levels for good, and one past its JSON reader's reach (about 950) it
    # could only answer with `error`, so that the worker offered it again forever, holding back the run's events.
    deep: object = "bottom"
    for _ in range(levels):  # `levels` arrays inside the payload's field: the event nests levels + 2 deep
        deep = [deep]
    window = SenderWindow(max_frames=1)
    frames = window.offer(note(0), note(1, text=deep), note(2))
    assert [seqs(f) for f in frames] == [[0, 2]]  # the rest goes out, in one frame
    assert window.take_refused() == [
        (("7", 1), f"not sent: it nests deeper than the {EVENT_MAX_DEPTH} levels every reader takes")
    ]
    assert not window.holds(("7", 1))


def test_an_event_nested_exactly_as_deep_as_readers_take_is_sent():
    deep: object = "bottom"
    for _ in range(EVENT_MAX_DEPTH - 2):  # envelope 1, payload 2, then the arrays: EVENT_MAX_DEPTH levels in all
        deep = [deep]
    window = SenderWindow(max_frames=1)
    assert [seqs(f) for f in window.offer(note(0, text=deep))] == [[0]] and window.take_refused() == []
