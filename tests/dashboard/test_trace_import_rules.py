"""A trace import holds each line to the protocol's envelope (docs/protocol.md 1.1 and 1.3): exactly its fields,
v 1, one run, seq 0, 1, 2, … in line order, a seq again only as the same event; a trace of one format; and a
refusal that says in plain, short words what is wrong and where, storing nothing. The traces are the demo
recording, changed as an outside tester changed it (the trace audit's findings 8, 11 and 13)."""

import gzip
import io
import json
import lzma
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from runs.models import Run, Step
from runs.run_pages.selectors import trace_export_records
from runs.services import ServiceError, run_claim, trace_import, worker_events_record
from tests.dashboard.helpers import eval_result, event, make_user, make_worker
from tests.foundation.factories import make_run, make_task

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "agentloop" / "replays" / "matmul_cpu_demo.jsonl"


def demo_events() -> list[dict]:
    return [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]


def as_file(events: list) -> io.BytesIO:
    return io.BytesIO("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events).encode())


def refusal(events: list) -> str:
    """Why the import refuses these lines; and that it stored nothing."""
    make_task()
    with pytest.raises(ServiceError) as refused:
        trace_import(lines=as_file(events), name="t.jsonl")
    assert not Run.objects.exists() and not Step.objects.exists()
    return str(refused.value)


def test_the_demo_trace_as_it_is_imports_whole():
    make_task()
    run = trace_import(lines=as_file(demo_events()), name="demo.jsonl")
    assert run.step_count == len(demo_events()) == run.last_seq + 1


@pytest.mark.parametrize(
    "change, line, reason",
    [
        (lambda e: e[0].update(v=2), 1, "v must be 1, the protocol version this server reads, not 2"),
        (lambda e: e[0].update(v=True), 1, "v must be 1"),
        (lambda e: e[0].update(v=1.0), 1, "v must be 1"),
        (lambda e: e[3].update(evil=1), 4, '"evil" is not a field of an event (an event has exactly v, run_id, seq'),
        (lambda e: e[3].pop("usage"), 4, "the event has no usage"),
        (lambda e: e[3].pop("ts"), 4, "the event has no ts"),
        (lambda e: e[3].pop("v"), 4, "the event has no v"),
        (lambda e: e[3].update(ts=None), 4, "ts is missing"),
        (lambda e: e[3].update(run_id=None), 4, "run_id must be a string or an integer, not null"),
        (lambda e: e[5].update(run_id="another"), 6, 'run_id "another" is not the trace\'s run ("demo")'),
        (lambda e: e[0].update(run_id=7), 2, 'run_id "demo" is not the trace\'s run (7)'),
    ],
)
def test_a_line_that_breaks_the_envelope_is_refused_naming_the_line(change, line, reason):
    events = demo_events()
    change(events)
    message = refusal(events)
    assert message.startswith(f"line {line}: ") and reason in message


REPEAT = "a usage event's envelope usage must repeat its payload's tokens_in, tokens_out, cost_usd"
EXACTLY = "usage must be an object with exactly tokens_in, tokens_out, cost_usd, not null"


@pytest.mark.parametrize(
    "kind, change, reason",
    [
        ("usage", lambda e: e["usage"].update(tokens_in=e["usage"]["tokens_in"] + 1), REPEAT),
        ("usage", lambda e: e["usage"].update(tokens_out=0), REPEAT),
        ("usage", lambda e: e["usage"].update(cost_usd=0.5), REPEAT),
        ("usage", lambda e: e.update(usage=None), EXACTLY),
        ("usage", lambda e: e["usage"].pop("cost_usd"), "usage must have exactly tokens_in, tokens_out, cost_usd"),
        ("model_message", lambda e: e.update(usage=None), EXACTLY),
        ("status", lambda e: e["usage"].update(cache_read_tokens=0), "usage must have exactly tokens_in"),
    ],
)
def test_a_line_whose_usage_a_worker_could_not_send_is_refused_naming_the_line(kind, change, reason):
    """docs/protocol.md 1.1's usage, held as on the wire (runs.event_parser.usage_problem): its three fields, and a
    usage event's repeating its payload's; the import stores nothing of the trace (`refusal` checks)."""
    events = demo_events()
    index = next(i for i, e in enumerate(events) if e["kind"] == kind)
    change(events[index])
    assert refusal(events).startswith(f"line {index + 1}: {reason}")


def test_a_gap_in_the_numbering_is_refused_naming_the_line():
    events = demo_events()
    del events[5:8]
    assert refusal(events) == (
        "line 6: seq 8 follows seq 4, where seq 5 was due: a trace's events are numbered 0, 1, 2, … in line order, "
        "with no gaps (docs/protocol.md 1.1)"
    )


def test_a_trace_that_does_not_start_at_seq_0_or_is_out_of_order_is_refused():
    assert "line 1: seq 28 is the trace's first event, where seq 0 was due" in refusal(demo_events()[::-1])
    Run.objects.all().delete()
    events = demo_events()
    events[3], events[4] = events[4], events[3]
    assert refusal(events).startswith("line 4: seq 4 follows seq 2, where seq 3 was due")


def test_an_event_sent_again_unchanged_is_stored_once_wherever_its_line_is():
    events = demo_events()
    make_task()
    run = trace_import(lines=as_file(events[:10] + [events[9], events[2]] + events[10:] + [events[0]]), name="t")
    assert run.step_count == len(events) and run.status == trace_import(lines=as_file(events), name="u").status


def another_call(**fields):
    """A change to a usage event's call: its payload and its envelope alike (the envelope repeats the payload)."""

    def change(event: dict) -> None:
        event["payload"].update(fields)
        event["usage"].update(fields)

    return change


@pytest.mark.parametrize(
    "change, differs",
    [
        (another_call(tokens_in=999), "payload and usage"),
        (another_call(cost_usd=0.5), "payload and usage"),
        (lambda e: e.update(ts="2026-11-30T11:41:59+00:00"), "ts"),
        (lambda e: e["payload"].update(reason="resumed"), "payload"),
        (lambda e: e.update(ts="2026-11-30T13:41:02.500798+02:00"), None),  # the same instant: the same event
    ],
)
def test_an_event_sent_again_with_another_usage_or_time_is_refused_saying_what_differs(change, differs):
    events = demo_events()
    # a count or a cost only on a usage event (docs/protocol.md 1.1): the first one's is changed, the rest on seq 0's
    kind = "usage" if differs and "usage" in differs else "status"
    again = json.loads(json.dumps(next(e for e in events if e["kind"] == kind)))
    change(again)
    if differs is None:
        make_task()
        assert trace_import(lines=as_file(events + [again]), name="t").step_count == len(events)
        return
    assert refusal(events + [again]) == (
        f"line {len(events) + 1}: seq {again['seq']} again, with another {differs} than the event an earlier line gave it: an "
        "event sent again must be the same event (docs/protocol.md 1.1)"
    )


def test_a_last_line_cut_short_by_a_crash_is_ignored_and_one_before_the_end_is_refused():
    events = demo_events()
    cut = [json.dumps(e) for e in events[:6]] + [json.dumps(events[6])[:40]]
    make_task()
    assert trace_import(lines=as_file(cut), name="crashed.jsonl").step_count == 6
    Run.objects.all().delete()
    assert refusal(cut + [events[7]]) == "line 7 is not JSON"


def test_a_file_whose_only_line_is_not_json_is_refused_naming_the_line_not_as_a_trace_without_events():
    # A text file uploaded by mistake: its one line is not a trace's last line cut short (nothing before it was
    # an event), so the refusal says what is wrong with it (new-user audit finding 2: "the trace holds no events").
    reason = "line 1 is not JSON: a trace is JSON, one event a line (docs/protocol.md 1.3)"
    assert refusal(["not json"]) == reason
    assert refusal(["", "hello, world"]) == reason.replace("line 1", "line 2")
    assert refusal([]) == "the trace holds no events"


def test_an_export_of_a_run_with_an_event_the_server_refused_imports_with_its_gap():
    host, _ = make_worker()
    make_run()
    run = run_claim(worker=host)
    payloads = [
        (0, "status", {"status": "running", "reason": "started"}),
        (2, "note", {"text": "seq 1 was refused for good, so the run has no step 1", "level": "info"}),
    ]
    for seq, kind, payload in payloads:
        [outcome] = worker_events_record(items=[(host, event(run.pk, seq, kind, payload))])
        assert outcome.stored
    lines = [json.dumps(r, default=str) for r in trace_export_records(run)]
    copy = trace_import(lines=lines, name="export.jsonl")
    assert list(copy.steps.values_list("seq", flat=True).order_by("seq")) == [0, 2]
    # The export's numbering is still held: its events are its run line's run, and no later line fills a gap.
    records = [json.loads(line) for line in lines]
    records[2]["run_id"] = run.pk + 1000
    with pytest.raises(ServiceError, match=f"line 3: run_id {run.pk + 1000} is not the trace's run \\({run.pk}\\)"):
        trace_import(lines=[json.dumps(r) for r in records], name="x")
    records = [json.loads(line) for line in lines]
    filler = dict(records[1], seq=1)
    with pytest.raises(ServiceError, match="line 4: seq 1 follows seq 2, where seq 3 was due"):
        trace_import(lines=[json.dumps(r) for r in records[:3] + [filler] + records[3:]], name="y")


# Finding 8: one format a trace.


def harness_line(source="// v2\n") -> dict:
    return {"kind": "evaluation", "note": "", "summary": "", **eval_result(1.5, source=source)}


def test_a_trace_of_run_events_with_a_harness_line_is_refused_naming_that_line():
    events = demo_events()
    assert refusal(events + [harness_line()]) == (
        f"line {len(events) + 1} is a harness --trace line, but line 1 is a run event (or an export's line): a "
        "trace holds one format or the other, so import them apart"
    )


def test_a_harness_trace_with_a_run_event_is_refused_naming_that_line():
    assert refusal([harness_line(), harness_line("// v3\n"), demo_events()[0]]) == (
        "line 3 is a run event (or an export's line), but line 1 is a harness --trace line: a trace holds one "
        "format or the other, so import them apart"
    )


# Finding 13: refusals in plain words.


@pytest.mark.parametrize(
    "pack, words",
    [
        (gzip.compress, "the file is gzip-compressed, not JSONL text: decompress it first (gunzip -k FILE)"),
        (lzma.compress, "the file is xz-compressed, not JSONL text: decompress it first (xz -dk FILE)"),
        (
            lambda b: b"\x28\xb5\x2f\xfd" + b,
            "the file is zstd-compressed, not JSONL text: decompress it first (zstd -d",
        ),
        (lambda b: b"PK\x03\x04" + b, "the file is zip-compressed, not JSONL text: decompress it first (unzip FILE)"),
    ],
)
def test_a_compressed_upload_is_refused_saying_so_and_how_to_decompress_it(client, pack, words):
    make_task()
    client.force_login(make_user("olga", "operator"))
    packed = pack(DEMO.read_bytes())
    response = client.post(reverse("trace_import"), {"trace": SimpleUploadedFile("demo.jsonl.xz", packed)})
    assert response.status_code == 400 and words in response.content.decode()
    assert "UTF-8" not in response.content.decode() and not Run.objects.exists()


def test_a_file_over_the_size_limit_is_refused_with_both_sizes_in_bytes_and_in_mib_that_differ(client, settings):
    settings.KSEEK_TRACE_UPLOAD_MAX_BYTES = 32 * 2**20
    client.force_login(make_user("olga", "operator"))
    upload = SimpleUploadedFile("big.jsonl", b"x" * (32 * 2**20 + 1))
    response = client.post(reverse("trace_import"), {"trace": upload})
    page = " ".join(response.content.decode().split())
    assert response.status_code == 413 and not Run.objects.exists()
    assert (
        "the file is 33,554,433 bytes (32.000001 MiB); the import takes at most 33,554,432 bytes (32.000000 MiB) "
        "(KSEEK_TRACE_UPLOAD_MAX_BYTES=33554432)"
    ) in page


def first_evaluation(events: list[dict]) -> dict:
    return next(e for e in events if e["kind"] == "evaluation")


@pytest.mark.parametrize(
    "change, words",
    [
        (
            lambda p: p["result"]["scenarios"][0].pop("id"),
            "each of a verdict's scenarios must be an object with its id (result.scenarios)",
        ),
        (
            lambda p: p["result"]["scenarios"].append("oops"),
            "each of a verdict's scenarios must be an object with its id (result.scenarios)",
        ),
        (
            lambda p: p.update(scenario_set=[1, 2]),
            "an evaluation's scenario_set must be a set's name or a list of scenario ids (strings)",
        ),
        (
            lambda p: p.update(kernel_source="// a kernel\n\ud800" + "x" * 100_000),
            "payload.kernel_source holds '\\ud800', a lone surrogate, at character 12: not text that UTF-8 can carry",
        ),
    ],
)
def test_an_evaluation_of_the_wrong_shape_is_refused_in_plain_words_naming_the_field(change, words):
    events = demo_events()
    evaluation = first_evaluation(events)
    change(evaluation["payload"])
    message = refusal(events)
    # (the store's refusals name the seq; the parser's, which come first, the line alone)
    line = evaluation["seq"] + 1
    assert message in (f"line {line} (seq {evaluation['seq']}): {words}", f"line {line}: {words}")


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e[0]["payload"]["config"].update(task="t" * 100_000),
        lambda e: e[3].update(ts="x" * 100_000),
        lambda e: e[3].update(kind="k" * 100_000),
        lambda e: e[3].update(seq="9" * 100_000),
        lambda e: e[3].update(run_id="r" * 100_000),
        lambda e: e[3].update(**{"f" * 100_000: 1}),
    ],
)
def test_a_refusal_quotes_at_most_a_short_part_of_what_the_trace_holds(change):
    events = demo_events()
    change(events)
    message = refusal(events)
    assert len(message) <= 400 and not any(c * 100 in message for c in "tx k9rf")


def test_an_effect_raising_on_a_malformed_payload_is_told_in_words_never_as_the_exceptions_repr():
    from runs.services.steps import shape_words

    source = "// a kernel source\n" * 50_000
    surrogate = UnicodeEncodeError("utf-8", source + "\ud800", len(source), len(source) + 1, "surrogates not allowed")
    assert shape_words(KeyError("id")) == "its field 'id' is missing"
    assert shape_words(surrogate) == "a string in it holds a character that UTF-8 cannot carry (a lone surrogate)"
    said = shape_words(TypeError("string indices must be integers, not 'str'" + "!" * 1000))
    assert (
        said.startswith("a field in it holds a value of another type than it should (string indices")
        and len(said) < 200
    )


@pytest.mark.parametrize(
    "change,reason",
    [
        (lambda e: e | {"ts": "9999-12-31T23:59:59-14:00"}, "outside the times the server holds"),
        (lambda e: e | {"payload": e["payload"] | {"content": [{"type": "text", "n": 10**400}]}}, "past what a double"),
    ],
)
def test_a_line_the_server_could_not_hold_is_refused_naming_the_line_as_a_workers_event_is(change, reason):
    """docs/protocol.md 1.1: a time past year 9999 in UTC and an integer past a double are refused for good from a
    worker and in an import alike (the import raised an error of the database's, or stored what no reader reads)."""
    events = demo_events()
    events[1] = change(events[1])
    assert "line 2" in refusal(events) and reason in refusal(events)
