"""The worker socket (docs/protocol.md section 2): token auth, events stored once and acked, directives delivered."""

import json
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agentloop.protocol import EVENT_MAX_BYTES
from runs.models import (
    Directive,
    Evaluation,
    Question,
    QuestionStatus,
    RefusedEvent,
    Run,
    RunStatus,
    Step,
    WorkerHost,
)
from runs.services import (
    question_review,
    run_control,
    run_send_human_message,
    worker_host_revoke,
    worker_host_rotate_token,
)
from tests.dashboard.helpers import (
    connected_worker,
    eval_result,
    evaluation_payload,
    event,
    make_user,
    make_worker,
    question_payload,
    usage_event,
    worker_socket,
)
from tests.foundation.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)


async def claimed_run(socket, **run_fields):
    run = await sync_to_async(make_run)(**run_fields)
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assign = await socket.receive_json_from(timeout=5)
    assert assign["type"] == "assign" and assign["run"]["id"] == run.pk
    return run


async def two_hosts():
    """Sockets of two worker hosts, and a run the first one holds."""
    _, token_a = await sync_to_async(make_worker)("gpu-a")
    _, token_b = await sync_to_async(make_worker)("gpu-b")
    socket_a = await connected_worker(token_a)
    theirs = await claimed_run(socket_a)
    return socket_a, await connected_worker(token_b), theirs


async def test_a_socket_without_a_token_is_refused_at_the_handshake():
    socket = worker_socket(None)
    connected, _ = await socket.connect()
    assert not connected


async def test_a_revoked_token_is_refused():
    host, token = await sync_to_async(make_worker)()
    await sync_to_async(worker_host_revoke)(host=host)
    connected, _ = await worker_socket(token).connect()
    assert not connected


async def test_revoking_a_host_closes_its_open_socket_with_4401_and_stores_nothing_more_of_it():
    host, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    await claimed_run(socket)
    await sync_to_async(make_run)()  # queued: a claim after the revocation must not get it
    await sync_to_async(worker_host_revoke)(host=host)
    assert (await socket.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4401}
    assert await sync_to_async(Run.objects.filter(status=RunStatus.QUEUED).count)() == 1


@pytest.mark.parametrize("first", ["event", "oversized event", "claim"])
async def test_a_host_revoked_where_no_message_reached_its_socket_is_closed_at_its_next_event_or_claim(first):
    """A revocation made in another process with no shared channel layer (`manage.py worker_token --revoke` beside
    a single daphne) does not reach the socket: the host's next event is not stored (a retry nack: it stays in its
    spool for a new token), an event over the size limit too (not refused for good, nor kept on its run: nothing
    the host sends is acted on), and its next claim gets no run; each closes the socket with 4401."""
    host, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    queued = await sync_to_async(make_run)()
    await sync_to_async(WorkerHost.objects.filter(pk=host.pk).update)(revoked_at=timezone.now())  # no message sent
    if first != "claim":
        text = "x" * (EVENT_MAX_BYTES if first == "oversized event" else 20)
        await socket.send_json_to(event(run.pk, 0, "note", {"text": text, "level": "info"}))
        reply = await socket.receive_json_from(timeout=5)
        assert reply["type"] == "nack" and reply["retry"] is True and "revoked" in reply["error"], reply
        assert not await sync_to_async(RefusedEvent.objects.filter(run=run).exists)()
    else:
        await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert (await socket.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4401}
    assert not await sync_to_async(Step.objects.filter(run=run).exists)()
    assert (await sync_to_async(Run.objects.get)(pk=queued.pk)).status == RunStatus.QUEUED


async def test_rotating_a_token_closes_the_socket_opened_with_the_old_one_and_keeps_the_new_ones():
    """`worker_token --rotate` is what an operator runs when a token leaked: a socket opened with the old token
    (the leaker's) must not keep taking runs, while the host's worker restarted with the new token serves on."""
    host, old = await sync_to_async(make_worker)()
    socket = await connected_worker(old)
    await claimed_run(socket)
    queued = await sync_to_async(make_run)()
    _, new = await sync_to_async(worker_host_rotate_token)(host=host)
    assert (await socket.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4401}
    assert (await sync_to_async(Run.objects.get)(pk=queued.pk)).status == RunStatus.QUEUED
    fresh = await connected_worker(new)
    await sync_to_async(worker_host_rotate_token)(host=host)  # a second rotation closes the fresh socket
    assert (await fresh.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4401}


@pytest.mark.parametrize("first", ["event", "claim"])
async def test_a_socket_whose_token_was_replaced_where_no_message_reached_it_is_closed_at_its_next_event_or_claim(
    first,
):
    """A rotation in another process with no shared channel layer: the database says the socket's token is no
    longer the host's, so its event is not stored (a retry nack) and its claim gets no run."""
    host, old = await sync_to_async(make_worker)()
    socket = await connected_worker(old)
    run = await claimed_run(socket)
    queued = await sync_to_async(make_run)()
    await sync_to_async(WorkerHost.objects.filter(pk=host.pk).update)(token_hash="0" * 64)  # no message sent
    if first == "event":
        await socket.send_json_to(event(run.pk, 0, "note", {"text": "after the rotation", "level": "info"}))
        reply = await socket.receive_json_from(timeout=5)
        assert reply["type"] == "nack" and reply["retry"] is True and "revoked" in reply["error"], reply
    else:
        await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert (await socket.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4401}
    assert not await sync_to_async(Step.objects.filter(run=run).exists)()
    assert (await sync_to_async(Run.objects.get)(pk=queued.pk)).status == RunStatus.QUEUED


async def test_a_claim_gets_the_queued_run_with_its_goal_and_budgets_or_no_work():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert (await socket.receive_json_from(timeout=5))["type"] == "no_work"
    run = await sync_to_async(make_run)(budget_steps=50)
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assign = await socket.receive_json_from(timeout=5)
    assert assign["run"]["task"] == "matmul_cpu" and assign["run"]["budgets"]["steps"] == 50
    assert assign["run"]["goal"] == {"baseline": "naive", "speedup": 2.0}
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == RunStatus.RUNNING
    await socket.disconnect()


async def test_an_event_is_stored_once_and_acked_each_time_it_is_sent():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    message = usage_event(run.pk, 0, tokens_in=10)
    for _ in range(2):
        await socket.send_json_to(message)
        assert await socket.receive_json_from(timeout=5) == {"type": "ack", "v": 1, "run_id": run.pk, "seq": 0}
    assert await sync_to_async(Step.objects.filter(run=run).count)() == 1
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).tokens_in == 10
    await socket.disconnect()


async def test_a_different_event_under_a_used_seq_is_nacked_without_retry():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "note", {"text": "one", "level": "info"}))
    await socket.receive_json_from(timeout=5)
    await socket.send_json_to(event(run.pk, 0, "note", {"text": "two", "level": "info"}))
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False and "different" in reply["error"]
    await socket.disconnect()


async def test_an_event_for_another_workers_run_is_refused():
    socket_a, socket_b, run = await two_hosts()
    await socket_b.send_json_to(event(run.pk, 0, "note", {"text": "not mine", "level": "info"}))
    reply = await socket_b.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False
    assert await sync_to_async(Step.objects.filter(run=run).count)() == 0
    await socket_a.disconnect()
    await socket_b.disconnect()


async def test_bad_json_a_wrong_version_and_an_unknown_type_get_errors_and_the_socket_stays_up():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    await socket.send_to(text_data="{not json")
    assert (await socket.receive_json_from(timeout=5))["type"] == "error"
    await socket.send_json_to({"type": "claim", "v": 2})
    assert "version" in (await socket.receive_json_from(timeout=5))["error"]
    # Python holds true and 1.0 equal to 1; the protocol's version is the JSON integer 1 (docs/protocol.md 2.1).
    for version in (True, 1.0):
        await socket.send_json_to({"type": "claim", "v": version})
        assert "version" in (await socket.receive_json_from(timeout=5))["error"]
    await socket.send_json_to({"type": "dance", "v": 1})
    assert "unknown" in (await socket.receive_json_from(timeout=5))["error"]
    await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert (await socket.receive_json_from(timeout=5))["type"] == "no_work"
    await socket.disconnect()


async def test_a_malformed_evaluation_is_nacked_and_leaves_no_step():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "evaluation", {"purpose": "tool", "result": "not an object"}))
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False
    assert await sync_to_async(Step.objects.filter(run=run).count)() == 0
    await socket.disconnect()


async def test_an_evaluation_event_stores_kernel_evaluation_scenarios_and_raises_the_best_speedup():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "evaluation", evaluation_payload(1.7)))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    evaluation = await sync_to_async(Evaluation.objects.select_related("kernel").get)(run=run)
    assert evaluation.kernel.source == "// fast\n" and evaluation.kernel.language == "cpp"
    assert len(evaluation.verdict["scenarios"]) == 2
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).best_speedup == pytest.approx(1.7)
    await socket.disconnect()


async def test_a_status_event_moves_the_run_and_a_status_after_the_final_one_is_refused():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "evaluation", evaluation_payload(2.5) | {"scenario_set": "full"}))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    await socket.send_json_to(event(run.pk, 1, "status", {"status": "succeeded", "reason": "goal_met"}))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == RunStatus.SUCCEEDED
    # A finished run stays finished, and its final status stays its last event (docs/protocol.md 1.2).
    await socket.send_json_to(event(run.pk, 2, "status", {"status": "running", "reason": "resumed"}))
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False and "has ended" in reply["error"], reply
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == RunStatus.SUCCEEDED
    await socket.disconnect()


@pytest.mark.parametrize("evidence", ["none", "too_slow", "one_scenario_wrong", "not_the_full_set"])
async def test_a_succeeded_status_without_a_stored_evaluation_that_met_the_goal_is_refused_and_the_run_fails(evidence):
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)  # goal: 2x over naive on n256 and n512
    seq = 0
    if evidence != "none":
        payload = {
            "too_slow": evaluation_payload(1.5),
            "one_scenario_wrong": evaluation_payload(2.5, failing="n512"),
            "not_the_full_set": evaluation_payload(2.5),
        }[evidence]
        if evidence == "not_the_full_set":
            payload["result"]["scenarios"] = payload["result"]["scenarios"][:1]
        payload["goal_met"] = True  # the worker's own word, which the server does not take
        await socket.send_json_to(event(run.pk, seq, "evaluation", payload))
        assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
        seq += 1
    await socket.send_json_to(
        event(run.pk, seq, "status", {"status": "succeeded", "reason": "goal_met", "goal_met": True})
    )
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False and "confirms the goal" in reply["error"], reply
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert stored.status == RunStatus.FAILED and "succeeded" in stored.status_reason
    assert not await sync_to_async(Step.objects.filter(run=run, kind="status").exists)()
    assert await sync_to_async(RefusedEvent.objects.filter(run=run, seq=seq, kind="status").exists)()
    await socket.disconnect()


async def test_a_final_status_event_gives_the_run_its_reason():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket, budget_cost_usd=Decimal("0.02"))
    await socket.send_json_to(
        event(
            run.pk,
            0,
            "status",
            {"status": "failed", "reason": "budget_cost", "detail": "cost budget spent: 0.0292 of 0.02"},
        )
    )
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.status, stored.status_reason) == (RunStatus.FAILED, "budget_cost: cost budget spent: 0.0292 of 0.02")
    await socket.disconnect()


@pytest.mark.parametrize(
    "field, value",
    [("usage", {"tokens_in": 999, "tokens_out": 0, "cost_usd": 5.0}), ("ts", "2026-12-01T00:00:00+00:00")],
)
@pytest.mark.parametrize("batched", [False, True])
async def test_a_resent_event_that_differs_in_usage_or_time_is_refused_and_the_totals_do_not_move(
    field, value, batched
):
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)

    async def send(message):
        if batched:
            await socket.send_json_to(
                {"type": "events", "v": 1, "events": [{k: v for k, v in message.items() if k not in ("type", "v")}]}
            )
        else:
            await socket.send_json_to(message)
        return await socket.receive_json_from(timeout=5)

    first = event(
        run.pk,
        0,
        "usage",
        {"purpose": "turn", "model": "m", "tokens_in": 10, "tokens_out": 2, "cost_usd": 0.01},
        tokens_in=10,
        tokens_out=2,
        cost_usd=0.01,
    )
    assert (await send(first))["type"] in ("ack", "acks")
    assert (await send(first))["type"] in ("ack", "acks")  # the same event again: stored once, acked again
    changed = first | {field: value}
    if field == "usage":  # a usage event's envelope repeats its payload (docs/protocol.md 1.1): both differ
        changed["payload"] = first["payload"] | value
    reply = await send(changed)
    assert reply["type"] == "nack" and reply["retry"] is False and "different step #0" in reply["error"], reply
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.step_count, stored.tokens_in, stored.tokens_out, stored.cost_usd) == (1, 10, 2, Decimal("0.01"))
    await socket.disconnect()


async def test_a_reviewers_decision_reaches_the_worker_as_a_directive_and_is_not_resent_once_acked():
    _, token = await sync_to_async(make_worker)()
    reviewer = await sync_to_async(make_user)("rita", "reviewer")
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "question_proposed", question_payload("q-1")))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    question = await sync_to_async(Question.objects.get)(run=run)
    assert question.status == QuestionStatus.PROPOSED and question.decision_point == "plateau"

    await sync_to_async(question_review)(
        question=question, reviewer=reviewer, decision="edit", text="Profile it first?"
    )
    directive = await socket.receive_json_from(timeout=5)
    assert directive["type"] == "directive" and directive["action"] == "question_decision"
    assert (directive["question_ref"], directive["decision"], directive["text"], directive["reviewer"]) == (
        "q-1",
        "edit",
        "Profile it first?",
        "rita",
    )
    await socket.send_json_to({"type": "directive_ack", "v": 1, "id": directive["id"]})
    await socket.disconnect()

    again = await connected_worker(token)
    assert await again.receive_nothing(timeout=0.5)
    assert await sync_to_async(Directive.objects.filter(acked_at__isnull=False).count)() == 1
    await again.disconnect()


async def test_an_unacked_directive_is_sent_again_after_the_next_hello():
    _, token = await sync_to_async(make_worker)()
    operator = await sync_to_async(make_user)("olga", "operator")
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await sync_to_async(run_send_human_message)(run=run, user=operator, text="try tiling")
    first = await socket.receive_json_from(timeout=5)
    assert first["action"] == "human_message" and first["text"] == "try tiling" and first["author"] == "olga"
    await socket.disconnect()

    again = await connected_worker(token)
    resent = await again.receive_json_from(timeout=5)
    assert resent["id"] == first["id"]
    await again.disconnect()


def _other_digits(wire_id: str) -> str:
    """The id with its digits written in Arabic-Indic digits, which Python's int() reads as the same number."""
    return "d-" + "".join(chr(0x0660 + int(digit)) for digit in wire_id[2:])


@pytest.mark.parametrize(
    "ack_id",
    [
        lambda wire_id: "d-\u00b2",  # a digit to str.isdigit, not to int(): the socket closed (1011)
        lambda wire_id: "d-" + "1" * 5000,  # past int()'s 4,300 digits: the socket closed (1011)
        lambda wire_id: "d-" + "9" * 30,  # past the largest key
        _other_digits,  # the server's id in other digits: it acknowledged the directive
        lambda wire_id: wire_id + " ",
    ],
)
async def test_a_directive_ack_that_names_no_directive_sent_is_answered_with_an_error_and_acks_nothing(ack_id):
    """docs/protocol.md 2.2: `directive_ack` names the `id` of a directive the server sent ("d-N"). Any other id
    is answered with an `error` and acknowledges nothing; the socket stays up."""
    _, token = await sync_to_async(make_worker)()
    operator = await sync_to_async(make_user)("olga", "operator")
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await sync_to_async(run_send_human_message)(run=run, user=operator, text="try tiling")
    sent = await socket.receive_json_from(timeout=5)
    await socket.send_json_to({"type": "directive_ack", "v": 1, "id": ack_id(sent["id"])})
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "error" and "no directive" in reply["error"] and len(reply["error"]) < 300, reply
    assert await sync_to_async(Directive.objects.filter(acked_at__isnull=False).count)() == 0
    await socket.send_json_to({"type": "directive_ack", "v": 1, "id": sent["id"]})
    assert await socket.receive_nothing(timeout=0.5)
    assert await sync_to_async(Directive.objects.filter(acked_at__isnull=False).count)() == 1
    await socket.disconnect()


async def test_the_worker_hears_pause_and_stop_and_a_late_decision_event_does_not_undo_a_veto():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await sync_to_async(run_control)(run=run, action="pause")
    assert (await socket.receive_json_from(timeout=5))["action"] == "pause"
    await sync_to_async(run_control)(run=run, action="stop")
    assert (await socket.receive_json_from(timeout=5))["action"] == "stop"
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == RunStatus.STOPPED
    await socket.disconnect()


async def test_an_auto_approval_reported_by_the_worker_decides_the_question():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "question_proposed", question_payload("q-9")))
    await socket.receive_json_from(timeout=5)
    await socket.send_json_to(
        event(run.pk, 1, "question_decided", {"question_ref": "q-9", "action": "approve", "by": "timeout"})
    )
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    question = await sync_to_async(Question.objects.get)(run=run)
    assert question.status == QuestionStatus.APPROVED and question.reviewer_id is None
    await socket.disconnect()


async def worker_and_browser(client):
    """A worker socket holding a run, and a signed-in viewer's browser following that run's feed."""
    from channels.testing import WebsocketCommunicator

    from kseek_site.asgi import application
    from tests.dashboard.helpers import BROWSER_HEADERS, login_cookie

    _, token = await sync_to_async(make_worker)()
    viewer = await sync_to_async(make_user)("vera")
    worker = await connected_worker(token)
    run = await claimed_run(worker)
    session = await login_cookie(client, viewer)
    browser = WebsocketCommunicator(
        application, f"/ws/runs/{run.pk}/", headers=BROWSER_HEADERS + [(b"cookie", f"sessionid={session}".encode())]
    )
    assert (await browser.connect())[0]
    return worker, run, browser


async def test_a_browser_following_the_run_hears_of_a_worker_event_after_it_is_stored(client):
    worker, run, browser = await worker_and_browser(client)
    await worker.send_json_to(event(run.pk, 0, "note", {"text": "hi", "level": "info"}))
    assert (await worker.receive_json_from(timeout=5))["type"] == "ack"
    assert await browser.receive_json_from(timeout=5) == {
        "type": "step.stored",
        "run_id": run.pk,
        "seq": 0,
        "kind": "note",
    }
    await browser.disconnect()
    await worker.disconnect()


async def test_a_reconnecting_worker_that_no_longer_holds_its_runs_gets_them_requeued_or_failed():
    host, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    started = await claimed_run(socket)
    await socket.send_json_to(event(started.pk, 0, "status", {"status": "running", "reason": "started"}))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    never_started = await claimed_run(socket)
    kept = await claimed_run(socket)
    await socket.disconnect()

    # It comes back holding only `kept` (say its state folder was wiped and one run resumed from elsewhere).
    again = worker_socket(token)
    assert (await again.connect())[0]
    await again.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-a", "gpus": [], "targets": ["cpu"], "active_runs": [{"run_id": kept.pk}]}
    )
    assert (await again.receive_json_from(timeout=5))["type"] == "welcome"
    get = sync_to_async(Run.objects.get)
    assert (await get(pk=kept.pk)).status == RunStatus.RUNNING
    lost = await get(pk=started.pk)
    assert lost.status == RunStatus.FAILED and "reconnected without this run" in lost.status_reason
    requeued = await get(pk=never_started.pk)
    assert requeued.status == RunStatus.QUEUED and requeued.worker_id is None
    await again.disconnect()


async def test_a_hello_without_a_readable_list_of_runs_changes_no_run():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.disconnect()
    again = worker_socket(token)
    assert (await again.connect())[0]
    await again.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-a", "gpus": [], "targets": ["cpu"], "active_runs": "all of them"}
    )
    assert (await again.receive_json_from(timeout=5))["type"] == "welcome"
    assert (await sync_to_async(Run.objects.get)(pk=run.pk)).status == RunStatus.RUNNING
    await again.disconnect()


# ---- a run's final status is its last event (docs/protocol.md 1.2, 2.4)
async def replies(socket, count: int) -> dict[int, dict]:
    """The next `count` acks and nacks, by seq."""
    got = {}
    while len(got) < count:
        reply = await socket.receive_json_from(timeout=5)
        assert reply["type"] in ("ack", "nack"), reply
        got[reply["seq"]] = reply
    return got


def ended(reply: dict) -> bool:
    return reply["type"] == "nack" and reply["retry"] is False and "has ended" in reply["error"]


async def test_after_a_final_status_new_events_are_refused_for_good_and_resends_still_acked():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    note = event(run.pk, 0, "note", {"text": "before", "level": "info"})
    final = event(run.pk, 2, "status", {"status": "failed", "reason": "budget_steps", "detail": "50 of 50"})
    # The final status and a note after it in one batch: the note is refused, the final status stored.
    await socket.send_json_to(batch(note, final, event(run.pk, 3, "note", {"text": "after", "level": "info"})))
    acked, nacks = await answers_for(socket, 3)
    assert sorted(acked) == [(run.pk, 0), (run.pk, 2)] and [n["seq"] for n in nacks] == [3] and ended(nacks[0])
    later = [
        event(run.pk, 4, "note", {"text": "later", "level": "info"}),
        event(run.pk, 5, "status", {"status": "failed", "reason": "internal_error", "detail": "a new reason"}),
        event(run.pk, 1, "status", {"status": "stopped", "reason": "stopped_by_human"}),  # a second final status
    ]
    for message in later:
        await socket.send_json_to(message)
    assert all(ended(reply) for reply in (await replies(socket, 3)).values())
    # Re-sends of stored events are acknowledged (stored once), and a gap before the end is filled.
    for message in (note, final, event(run.pk, 1, "note", {"text": "late but before the end", "level": "info"})):
        await socket.send_json_to(message)
    assert {seq: r["type"] for seq, r in (await replies(socket, 3)).items()} == {0: "ack", 2: "ack", 1: "ack"}
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.status, stored.status_reason, stored.step_count) == ("failed", "budget_steps: 50 of 50", 3)
    refused = await sync_to_async(list)(RefusedEvent.objects.filter(run=run).order_by("seq").values_list("seq"))
    assert refused == [(1,), (3,), (4,), (5,)]  # #1: a second final status was refused there (the note came later)
    await socket.disconnect()


async def test_a_worker_catching_up_after_an_operator_stop_stores_its_tail_and_its_final_status_ends_it():
    """run_control stops the run at once; its worker hears the stop at its next turn boundary and sends what it
    did until then and its own final status (step_effects keeps the run stopped). After that, nothing more."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await sync_to_async(run_control)(run=run, action="stop")
    assert (await socket.receive_json_from(timeout=5))["action"] == "stop"
    await socket.send_json_to(event(run.pk, 0, "note", {"text": "the turn in flight", "level": "info"}))
    await socket.send_json_to(event(run.pk, 1, "status", {"status": "stopped", "reason": "stopped_by_human"}))
    await socket.send_json_to(event(run.pk, 2, "note", {"text": "after the end", "level": "info"}))
    got = await replies(socket, 3)
    assert got[0]["type"] == got[1]["type"] == "ack" and ended(got[2]), got
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.status, stored.status_reason, stored.step_count) == ("stopped", "stopped_by_human", 2)
    await socket.disconnect()


async def test_after_the_server_ends_a_run_itself_its_workers_new_events_are_refused_as_after_a_final_status():
    """A run the server failed without its worker's final status (its host came back without it,
    workers.worker_runs_reconcile) takes nothing more, exactly as after a final status: a new event, a later one and
    a final status are refused for good with the protocol's "has ended"; a re-send is still acked, a gap filled."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    started = event(run.pk, 0, "status", {"status": "running", "reason": "started"})
    await socket.send_json_to(batch(started, event(run.pk, 2, "note", {"text": "before", "level": "info"})))
    assert sorted((await answers_for(socket, 2))[0]) == [(run.pk, 0), (run.pk, 2)]
    await socket.disconnect()
    again = worker_socket(token)  # back without the run: the server fails it
    assert (await again.connect())[0]
    await again.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-a", "gpus": [], "targets": ["cpu"], "active_runs": []}
    )
    assert (await again.receive_json_from(timeout=5))["type"] == "welcome"
    reason = (await sync_to_async(Run.objects.get)(pk=run.pk)).status_reason
    after = [
        event(run.pk, 3, "note", {"text": "after the end", "level": "info"}),
        event(run.pk, 4, "status", {"status": "succeeded", "reason": "goal_met"}),
        event(run.pk, 1, "status", {"status": "stopped", "reason": "stopped_by_human"}),  # a final status, even early
    ]
    for message in after:
        await again.send_json_to(message)
    got = await replies(again, 3)
    assert all(ended(reply) for reply in got.values()), got
    assert got[3]["error"] == (
        f"run {run.pk} has ended: the server ended it failed after step #2, and no event after it (nor another final "
        "status) is stored"
    )
    for message in (started, event(run.pk, 1, "note", {"text": "a gap before the end", "level": "info"})):
        await again.send_json_to(message)
    assert {seq: r["type"] for seq, r in (await replies(again, 2)).items()} == {0: "ack", 1: "ack"}
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.status, stored.status_reason, stored.step_count, stored.last_seq) == ("failed", reason, 3, 2)
    await again.disconnect()


async def test_a_question_ref_used_in_the_run_is_refused_for_a_new_proposal_and_a_resend_is_acked():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    first = event(run.pk, 0, "question_proposed", question_payload("q-x-0"))
    await socket.send_json_to(first)
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    await socket.send_json_to(event(run.pk, 1, "question_proposed", question_payload("q-x-0", "Another question?")))
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False, reply
    assert "question_ref 'q-x-0' is already used in run" in reply["error"] and "step #0" in reply["error"]
    await socket.send_json_to(first)
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    assert await sync_to_async(Question.objects.filter(run=run).count)() == 1
    assert await sync_to_async(Step.objects.filter(run=run).count)() == 1
    await socket.disconnect()


@pytest.mark.parametrize(
    "active_runs",
    [
        [{"run_id": None}],
        [{"run_id": 15.0}],
        [{"run_id": [18]}],
        [{"run_id": True}],
        [{"last_seq": 3}],
        ["run 7"],
        [{"run_id": "RUN"}],  # a string: filled in with the held run's id below, as "16" for run 16
    ],
)
async def test_an_active_runs_entry_that_names_no_run_by_its_integer_id_changes_no_run(active_runs):
    """docs/protocol.md 2.4: a malformed active_runs changes nothing; a run id is a JSON integer (1.1), so a
    string, a float, a boolean or null makes the whole list malformed. The host holds two started runs: a list
    read as naming one of them (as "16" was read as run 16) would fail the other."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    runs = [await claimed_run(socket), await claimed_run(socket)]
    for run in runs:
        await socket.send_json_to(event(run.pk, 0, "status", {"status": "running", "reason": "started"}))
        assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    await socket.disconnect()
    entries = [{"run_id": str(runs[0].pk)} if e == {"run_id": "RUN"} else e for e in active_runs]
    again = worker_socket(token)
    assert (await again.connect())[0]
    await again.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-a", "gpus": [], "targets": ["cpu"], "active_runs": entries}
    )
    assert (await again.receive_json_from(timeout=5))["type"] == "welcome"
    for run in runs:
        stored = await sync_to_async(Run.objects.get)(pk=run.pk)
        assert stored.status == RunStatus.RUNNING and stored.status_reason == "", stored.status_reason
    await again.disconnect()


@pytest.mark.parametrize(
    ("gpus", "shown", "why"),
    [
        (["gpu 0", "gpu 1"], ["gpu 0", "gpu 1"], None),
        ([], [], None),
        ("gpu0", [], "must be a list of at most 64 GPU names, each a string of at most 100 characters"),
        ([1, 2], [], "must be a list of at most 64 GPU names"),
        ([f"gpu {i}" for i in range(65)], [], "must be a list of at most 64 GPU names"),
        (["x" * 101], [], "each a string of at most 100 characters"),
        (None, [], "must be a list of at most 64 GPU names"),
        # A name no UTF-8 text holds: stored, it made the workers page fail for every operator (500).
        (["gpu \ud800"], [], "no lone surrogate"),
    ],
)
async def test_a_hello_whose_gpus_are_malformed_is_told_why_and_its_host_shows_no_gpu(client, gpus, shown, why):
    """docs/protocol.md 2.2: `gpus` is a list of names, within the limits named there. A malformed list is not cut
    to fit or ignored (the host keeping what an earlier hello said): the host shows no GPU and the worker hears
    why, as for `targets`; it is welcomed all the same."""
    host, token = await sync_to_async(make_worker)()
    assert host.gpus == ["NVIDIA H200"]
    socket = worker_socket(token)
    assert (await socket.connect())[0]
    await socket.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-a", "gpus": gpus, "targets": ["cpu"], "active_runs": []}
    )
    assert (await socket.receive_json_from(timeout=5))["type"] == "welcome"
    if why is None:
        assert await socket.receive_nothing(timeout=0.3)
    else:
        error = await socket.receive_json_from(timeout=5)
        assert error["type"] == "error" and why in error["error"], error
    assert (await sync_to_async(WorkerHost.objects.get)(pk=host.pk)).gpus == shown
    await socket.disconnect()
    await sync_to_async(client.force_login)(await sync_to_async(make_user)("olga", "operator"))
    page = await sync_to_async(client.get)("/workers/")
    assert page.status_code == 200 and all(name in page.content.decode() for name in shown)


# ------------------------------------------------------------------------- events in batches (`events`, `acks`)


def batch(*events: dict) -> dict:
    """An `events` message of these `event` messages (each loses its type and v, which are the message's)."""
    return {
        "type": "events",
        "v": 1,
        "events": [{k: v for k, v in e.items() if k not in ("type", "v")} for e in events],
    }


async def answers_for(socket, count: int) -> tuple[list, list]:
    """The acknowledged (run_id, seq) and the nacks, until `count` events have been answered."""
    acked, nacks = [], []
    while len(acked) + len(nacks) < count:
        reply = await socket.receive_json_from(timeout=5)
        if reply["type"] == "acks":
            acked += [tuple(item) for item in reply["acks"]]
        elif reply["type"] == "nack":
            nacks.append(reply)
        else:
            raise AssertionError(f"unexpected reply {reply}")
    return acked, nacks


async def test_the_welcome_offers_events_in_batches():
    _, token = await sync_to_async(make_worker)()
    socket = worker_socket(token)
    assert (await socket.connect())[0]
    await socket.send_json_to(
        {"type": "hello", "v": 1, "host": "gpu-a", "gpus": [], "targets": ["cpu"], "active_runs": []}
    )
    welcome = await socket.receive_json_from(timeout=5)
    assert welcome["type"] == "welcome" and "events" in welcome["accepts"]
    await socket.disconnect()


async def test_a_batch_is_stored_once_per_seq_and_acked_in_one_acks_with_duplicates_acked_again():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(usage_event(run.pk, 0, tokens_in=4))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    # seq 0 was stored before; seq 1 comes twice in the batch.
    await socket.send_json_to(
        batch(
            usage_event(run.pk, 0, tokens_in=4),
            usage_event(run.pk, 1, tokens_in=5),
            usage_event(run.pk, 2, tokens_in=6),
            usage_event(run.pk, 1, tokens_in=5),
        )
    )
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "acks" and sorted(map(tuple, reply["acks"])) == [
        (run.pk, 0),
        (run.pk, 1),
        (run.pk, 1),
        (run.pk, 2),
    ]
    steps = await sync_to_async(list)(Step.objects.filter(run=run).order_by("seq").values_list("seq", "tokens_in"))
    assert steps == [(0, 4), (1, 5), (2, 6)]
    stored = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert (stored.step_count, stored.last_seq, stored.tokens_in) == (3, 2, 15)
    await socket.disconnect()


async def test_a_refused_event_in_a_batch_is_nacked_alone_and_the_others_are_acked():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(event(run.pk, 0, "note", {"text": "first", "level": "info"}))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    await socket.send_json_to(
        batch(
            event(run.pk, 0, "note", {"text": "a different first", "level": "info"}),
            event(run.pk, 1, "evaluation", {"purpose": "tool", "result": "not an object"}),
            event(run.pk, 2, "note", {"text": "fine", "level": "info"}),
            event(run.pk, 3, "evaluation", evaluation_payload(1.5)),
        )
    )
    acked, nacks = await answers_for(socket, 4)
    assert sorted(acked) == [(run.pk, 2), (run.pk, 3)]
    assert sorted((n["seq"], n["retry"]) for n in nacks) == [(0, False), (1, False)]
    assert all(n["error"] for n in nacks)
    steps = await sync_to_async(list)(Step.objects.filter(run=run).order_by("seq").values_list("seq", "payload"))
    assert [seq for seq, _ in steps] == [0, 2, 3] and steps[0][1] == {"text": "first", "level": "info"}
    assert await sync_to_async(Evaluation.objects.filter(run=run).count)() == 1
    await socket.disconnect()


async def test_events_for_a_run_the_sender_does_not_hold_are_refused_inside_a_batch():
    socket_a, socket_b, theirs = await two_hosts()
    mine = await claimed_run(socket_b)
    await socket_b.send_json_to(
        batch(
            event(mine.pk, 0, "note", {"text": "mine", "level": "info"}),
            event(theirs.pk, 0, "status", {"status": "stopped", "reason": "stopped_by_human"}),
            event(10**9, 0, "note", {"text": "no such run", "level": "info"}),
        )
    )
    acked, nacks = await answers_for(socket_b, 3)
    assert acked == [(mine.pk, 0)]
    assert sorted(n["run_id"] for n in nacks) == [theirs.pk, 10**9] and not any(n["retry"] for n in nacks)
    assert await sync_to_async(Step.objects.filter(run=theirs).count)() == 0
    assert (await sync_to_async(Run.objects.get)(pk=theirs.pk)).status == RunStatus.RUNNING
    await socket_a.disconnect()
    await socket_b.disconnect()


def _good(run_id, seq):
    return batch(event(run_id, seq, "note", {"text": f"note {seq}", "level": "info"}))["events"][0]


MALFORMED_BATCHES = {
    "no list": lambda run_id: {},
    "a string": lambda run_id: {"events": "all of them"},
    "an object": lambda run_id: {"events": {"0": _good(run_id, 0)}},
    "empty": lambda run_id: {"events": []},
    "one item not an object": lambda run_id: {"events": [_good(run_id, 0), "not an object"]},
    "over the count limit": lambda run_id: {"events": [_good(run_id, seq) for seq in range(1001)]},
}


@pytest.mark.parametrize("case", MALFORMED_BATCHES)
async def test_a_malformed_batch_gets_an_error_and_none_of_it_is_stored(case):
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to({"type": "events", "v": 1, **MALFORMED_BATCHES[case](run.pk)})
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "error" and "none of its events was stored" in reply["error"], reply
    assert await socket.receive_nothing(timeout=0.3)
    assert await sync_to_async(Step.objects.filter(run=run).count)() == 0
    # The socket stays up.
    await socket.send_json_to(batch(event(run.pk, 0, "note", {"text": "fine", "level": "info"})))
    assert await socket.receive_json_from(timeout=5) == {"type": "acks", "v": 1, "acks": [[run.pk, 0]]}
    await socket.disconnect()


async def test_a_browser_following_the_run_hears_of_a_batch_once_stored(client):
    worker, run, browser = await worker_and_browser(client)
    await worker.send_json_to(
        batch(*(event(run.pk, seq, "note", {"text": str(seq), "level": "info"}) for seq in range(3)))
    )
    assert (await worker.receive_json_from(timeout=5))["type"] == "acks"
    assert await browser.receive_json_from(timeout=5) == {
        "type": "step.stored",
        "run_id": run.pk,
        "seq": 0,
        "kind": "note",
        "last_seq": 2,
    }
    await browser.disconnect()
    await worker.disconnect()


# ---- whether a host is connected now (its runs' pages say when the host holding them is gone)
async def host_state(host_id: int) -> WorkerHost:
    return await sync_to_async(WorkerHost.objects.get)(pk=host_id)


async def test_a_host_is_connected_while_its_socket_is_open_and_offline_since_it_closed():
    host, token = await sync_to_async(make_worker)()
    assert not (await host_state(host.pk)).is_connected
    socket = await connected_worker(token)
    while_open = await host_state(host.pk)
    assert while_open.is_connected and while_open.last_seen is not None and while_open.disconnected_at is None
    await socket.disconnect()
    after = await host_state(host.pk)
    assert not after.is_connected and after.disconnected_at >= while_open.last_seen


async def test_the_late_close_of_an_old_socket_leaves_a_reconnected_host_connected():
    # A worker whose link died reconnects before the server notices that the old socket is gone.
    host, token = await sync_to_async(make_worker)()
    old = await connected_worker(token)
    new = await connected_worker(token)
    await old.disconnect()
    assert (await host_state(host.pk)).is_connected
    await new.disconnect()
    assert not (await host_state(host.pk)).is_connected


async def test_a_newer_socket_of_a_host_closes_the_older_with_4409_and_only_the_newer_is_heard():
    """docs/protocol.md 2.1: a host has one live socket, its newest. The audit's case: socket A holds a run and
    stores #0; socket B of the same host says hello without it. B's word is the host's (the run is lost there),
    and A, closed with 4409 when B opened, stores nothing more; the host is shown connected as long as B is open."""
    host, token = await sync_to_async(make_worker)()
    older = await connected_worker(token)
    run = await claimed_run(older)
    await older.send_json_to(event(run.pk, 0, "status", {"status": "running", "reason": "started"}))
    assert (await older.receive_json_from(timeout=5))["type"] == "ack"
    newer = await connected_worker(token, holding=[])
    assert (await older.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4409}
    lost = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert lost.status == RunStatus.FAILED and "reconnected without this run" in lost.status_reason
    await older.send_json_to(event(run.pk, 1, "note", {"text": "from the replaced socket", "level": "info"}))
    await older.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert await older.receive_nothing(timeout=0.3)
    assert await sync_to_async(Step.objects.filter(run=run).count)() == 1
    await older.disconnect()
    assert (await host_state(host.pk)).is_connected  # through the newer socket
    await newer.disconnect()
    assert not (await host_state(host.pk)).is_connected


@pytest.mark.parametrize("first", ["event", "claim"])
async def test_a_socket_whose_host_opened_a_newer_one_unheard_is_closed_at_its_next_message(first):
    """Where the replacement's message did not reach the older socket, the database says which socket is live:
    the older one's next event is not stored (a retry nack: the worker sends it on its live socket) and its next
    claim gets no run; either closes it with 4409."""
    host, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    queued = await sync_to_async(make_run)()
    await sync_to_async(WorkerHost.objects.filter(pk=host.pk).update)(connection="another-socket")  # no message
    if first == "event":
        await socket.send_json_to(event(run.pk, 0, "note", {"text": "from the older socket", "level": "info"}))
        reply = await socket.receive_json_from(timeout=5)
        assert reply["type"] == "nack" and reply["retry"] is True and "replaced this one" in reply["error"], reply
    else:
        await socket.send_json_to({"type": "claim", "v": 1, "gpu": 0})
    assert (await socket.receive_output(timeout=5)) == {"type": "websocket.close", "code": 4409}
    assert not await sync_to_async(Step.objects.filter(run=run).exists)()
    assert (await sync_to_async(Run.objects.get)(pk=queued.pk)).status == RunStatus.QUEUED


async def test_the_pages_of_a_hosts_runs_hear_when_it_goes_offline_and_its_summary_says_since_when(client):
    worker, run, browser = await worker_and_browser(client)
    summary = (await sync_to_async(client.get)(f"/runs/{run.pk}/summary/")).json()
    assert summary["worker"] == "gpu-a" and summary["worker_offline_since"] is None
    await worker.disconnect()
    changed = await browser.receive_json_from(timeout=5)
    assert changed["type"] == "run.changed" and changed["run_id"] == run.pk, changed
    summary = (await sync_to_async(client.get)(f"/runs/{run.pk}/summary/")).json()
    host = await sync_to_async(lambda: Run.objects.select_related("worker").get(pk=run.pk).worker)()
    assert summary["worker_offline_since"] == host.disconnected_at.isoformat()
    # A finished run needs no host: its page does not call the host's absence out.
    await sync_to_async(run_control)(run=run, action="stop")
    assert (await sync_to_async(client.get)(f"/runs/{run.pk}/summary/")).json()["worker_offline_since"] is None
    await browser.disconnect()


@pytest.mark.parametrize(
    "message",
    [
        {"type": "error", "v": 1, "error": "could not read an assign without id"},
        # docs/protocol.md 2.2: neither side answers an `error` with an `error`, whatever its `v` (a newer worker's)
        # or its nesting: both were answered with one.
        {"type": "error", "v": 2, "error": "a newer worker could not read a message"},
        {"type": "error", "v": True, "error": "no version"},
        {"type": "error", "v": 1, "error": json.loads("[" * 70 + "]" * 70)},
    ],
)
async def test_a_workers_error_message_is_logged_not_answered(message):
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    await socket.send_json_to(message)
    assert await socket.receive_nothing(timeout=0.5)
    await socket.send_json_to({"type": "claim", "v": 1})
    assert (await socket.receive_json_from(timeout=5))["type"] == "no_work"
    await socket.disconnect()


@pytest.mark.parametrize(
    "field,value,why",
    [
        ("kind", "dance", "unknown step kind"),
        ("ts", "yesterday", "timestamp"),
        ("payload", ["not", "an", "object"], "payload must be a JSON object"),
    ],
)
async def test_an_event_the_parser_refuses_is_nacked_and_kept_on_its_run_with_the_reason(client, field, value, why):
    socket_a, socket_b, run = await two_hosts()
    refused = {**event(run.pk, 4, "note", {"text": "hi", "level": "info"}), field: value}
    await socket_a.send_json_to(refused)
    reply = await socket_a.receive_json_from(timeout=5)
    assert reply["type"] == "nack" and reply["retry"] is False and why in reply["error"]
    kept = await sync_to_async(list)(RefusedEvent.objects.filter(run=run).values_list("seq", "error"))
    assert len(kept) == 1 and kept[0][0] == 4 and why in kept[0][1]
    # The run's page says what is missing and why.
    await sync_to_async(client.force_login)(await sync_to_async(make_user)("vera"))
    page = (await sync_to_async(client.get)(f"/runs/{run.pk}/")).content.decode()
    assert why in page
    # Nobody writes on another's run: the same event from a host that does not hold the run is not kept.
    await socket_b.send_json_to({**refused, "seq": 5})
    assert (await socket_b.receive_json_from(timeout=5))["type"] == "nack"
    assert await sync_to_async(RefusedEvent.objects.filter(run=run, seq=5).exists)() is False
    await socket_a.disconnect()
    await socket_b.disconnect()


# ------------------------------------------------------------------ the protocol audit (docs/protocol.md 1 and 2)


def _deep(depth: int, leaf):
    """A JSON value of `depth` nested arrays around `leaf`."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


BAD_BUT_READABLE = {
    # A kind holding a lone surrogate: its refusal was kept with that kind, which SQLite could not encode.
    "a lone surrogate in the kind": (
        lambda run_id: {**event(run_id, 2, "note", {"text": "x"}), "kind": "no\ud800te"},
        "unknown step kind",
    ),
    # A time that is a real instant but no UTC time a datetime column holds (year 10000 in UTC).
    "a time past year 9999 in UTC": (
        lambda run_id: {**event(run_id, 2, "note", {"text": "x"}), "ts": "9999-12-31T23:59:59-14:00"},
        "outside the times",
    ),
    "a time before year 1 in UTC": (
        lambda run_id: {**event(run_id, 2, "note", {"text": "x"}), "ts": "0001-01-01T00:00:00+14:00"},
        "outside the times",
    ),
    # An integer past what a double holds in an evaluation's verdict: reading its figures raised OverflowError.
    "a verdict's number past a double": (
        lambda run_id: event(
            run_id,
            2,
            "evaluation",
            evaluation_payload(1.5) | {"result": eval_result(1.5) | {"geomean": {"naive": {"speedup": 10**400}}}},
        ),
        "past what a double holds",
    ),
    # A payload nested deeper than the server's limit, with a NUL deep inside (escaping it recursed too far).
    "a payload nested too deep": (
        lambda run_id: event(
            run_id, 2, "decision_point", {"name": "plateau", "detail": "d", "evidence": _deep(600, "a\x00")}
        ),
        "nests deeper than",
    ),
}


@pytest.mark.parametrize("case", BAD_BUT_READABLE)
async def test_an_event_the_server_cannot_store_is_refused_for_good_and_holds_back_no_other_event(case):
    """docs/protocol.md 2.4: a refused event does not hold the others back, and `retry: true` is for a passing
    problem. Each of these made the writer raise: every event of its batch was nacked for retry ("server error"),
    and the worker sent them all again, forever."""
    make, why = BAD_BUT_READABLE[case]
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    await socket.send_json_to(
        batch(event(run.pk, 1, "note", {"text": "before"}), make(run.pk), event(run.pk, 3, "note", {"text": "after"}))
    )
    acked, nacks = await answers_for(socket, 3)
    assert sorted(acked) == [(run.pk, 1), (run.pk, 3)], nacks
    [nack] = nacks
    assert (nack["seq"], nack["retry"]) == (2, False) and why in nack["error"], nack
    kept = await sync_to_async(list)(RefusedEvent.objects.filter(run=run).values_list("seq", "error"))
    assert len(kept) == 1 and kept[0][0] == 2 and why in kept[0][1]
    await socket.disconnect()


def _strict_json(text: str):
    """JSON as RFC 8259 has it: no NaN or Infinity (a browser's or Go's reader refuses both)."""

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    "raw",
    [
        '{"type":"event","v":1,"run_id":1,"seq":1e400,"kind":"note","ts":"2026-11-30T12:00:00+00:00",'
        '"payload":{"text":"a"},"usage":{"tokens_in":0,"tokens_out":0,"cost_usd":0}}',
        '{"type":"event","v":1,"run_id":NaN,"seq":1,"kind":"note","ts":"2026-11-30T12:00:00+00:00",'
        '"payload":{"text":"a"},"usage":{"tokens_in":0,"tokens_out":0,"cost_usd":0}}',
        '{"type":"event","v":1,"run_id":"\\ud800","seq":-Infinity}',
        '{"type":"event","v":1,"run_id":[1],"seq":{"n":2}}',
    ],
)
async def test_every_answer_of_the_server_is_strict_json_whatever_the_worker_sent(raw):
    """docs/protocol.md 2.1: every message in either direction is JSON. A nack names the event's run_id and seq as
    sent; Python read 1e400 as infinity (and NaN as NaN) and wrote them back as `Infinity` and `NaN`, which no
    strict reader takes."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    await socket.send_to(text_data=raw)
    reply = _strict_json(await socket.receive_from(timeout=5))
    assert reply["type"] == "nack" and reply["retry"] is False, reply
    assert "\ud800" not in json.dumps(reply, ensure_ascii=False)
    # run_id and seq as sent when they are scalars, else null: a reply never carries a worker's structure back.
    assert not isinstance(reply["run_id"], list) and not isinstance(reply["seq"], dict), reply
    await socket.disconnect()


async def test_a_batch_item_may_carry_the_type_event_and_no_other_type():
    """docs/protocol.md 2.8: an item of `events` is an event's envelope, as an `event` message's (which adds
    `"type": "event"`). An item whose `type` said anything else was stored all the same."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    as_message = {**batch(event(run.pk, 0, "note", {"text": "a"}))["events"][0], "type": "event"}
    other = {**batch(event(run.pk, 1, "note", {"text": "b"}))["events"][0], "type": "claim"}
    await socket.send_json_to({"type": "events", "v": 1, "events": [as_message, other]})
    acked, nacks = await answers_for(socket, 2)
    assert acked == [(run.pk, 0)]
    assert [(n["seq"], n["retry"]) for n in nacks] == [(1, False)] and "type" in nacks[0]["error"], nacks
    assert await sync_to_async(list)(Step.objects.filter(run=run).values_list("seq", flat=True)) == [0]
    await socket.disconnect()


async def test_an_event_nested_too_deep_gets_a_final_nack_or_an_error_at_any_depth_and_the_socket_stays_up():
    """docs/protocol.md 2.1: an event nested deeper than the limit is refused for good; one nested too deep for the
    server's JSON reader is answered with `error`. Near the reader's limit, the event was read but measuring its
    size recursed too far: the socket closed (1011), and the worker sent it again, forever."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    for depth in [61, 62, 63, *range(100, 900, 100), *range(900, 1000)]:
        raw = json.dumps(event(run.pk, depth, "decision_point", {"name": "plateau", "detail": "d", "evidence": 0}))
        await socket.send_to(text_data=raw.replace('"evidence": 0', '"evidence": ' + "[" * depth + "]" * depth))
        reply = await socket.receive_json_from(timeout=5)
        if depth <= 62:  # the event nests depth + 2 levels: its envelope, its payload, then the arrays
            assert reply["type"] == "ack", reply
        elif reply["type"] == "nack":
            assert (reply["seq"], reply["retry"]) == (depth, False) and "nests deeper than 64" in reply["error"], reply
        else:
            assert reply["type"] == "error" and "not a JSON text message" in reply["error"], (depth, reply)
    await socket.send_json_to(event(run.pk, 5000, "note", {"text": "still up"}))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    await socket.disconnect()


async def test_a_message_nested_too_deep_is_answered_with_an_error_and_the_socket_stays_up():
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    for depth in range(900, 1000):
        await socket.send_to(text_data='{"type":"hello","v":1,"gpus":' + "[" * depth + "]" * depth + "}")
        reply = await socket.receive_json_from(timeout=5)
        assert reply["type"] == "error", reply
    await socket.send_json_to({"type": "claim", "v": 1})
    assert (await socket.receive_json_from(timeout=5))["type"] == "no_work"
    await socket.disconnect()


async def test_an_event_naming_its_run_by_no_run_id_is_refused_for_good_and_kept_on_no_run():
    """docs/protocol.md 1.1: a server run's id is a JSON integer; "7" names a run the server does not hold. Its
    refusal was kept on run 7 all the same (int("7"), and int(7.5)), as if the worker had named that run; and a
    run_id past the largest key made SQLite raise, nacking the whole batch for retry ("server error"), forever."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token)
    run = await claimed_run(socket)
    named = (str(run.pk), float(run.pk), run.pk + 0.5, 2**63, 2**70)
    items = [{**event(run.pk, seq, "note", {"text": "x"}), "run_id": run_id} for seq, run_id in enumerate(named)]
    await socket.send_json_to(batch(*items, event(run.pk, 9, "note", {"text": "fine"})))
    acked, nacks = await answers_for(socket, len(named) + 1)
    assert acked == [(run.pk, 9)], nacks
    assert all(n["retry"] is False for n in nacks) and len(nacks) == len(named), nacks
    assert all("integer" in n["error"] or "there is no run" in n["error"] for n in nacks), nacks
    assert await sync_to_async(RefusedEvent.objects.count)() == 0
    await socket.disconnect()


async def test_a_fault_of_the_servers_with_one_event_holds_back_no_other_hosts_or_events(monkeypatch):
    """docs/protocol.md 2.4: a refused event does not hold the others back. The sockets of one server process share
    one writer, which stores what arrived together in one transaction: an event that made the server raise (as
    findings 1, 2, 3, 7 and 10 of the protocol audit did) had every event of that batch, another host's included,
    nacked for retry, and again at every re-send. The faulty event alone is nacked for retry now."""
    from runs.services import step_effects

    def faulty(run, step):  # a decision point has no effects: this one stands for a fault of any kind's
        if step.payload.get("name") == "faulty":
            raise RuntimeError("a fault of the server's, not the event's")

    monkeypatch.setitem(step_effects.EFFECTS, "decision_point", faulty)
    socket_a, socket_b, theirs = await two_hosts()
    mine = await claimed_run(socket_b)
    await socket_a.send_json_to(
        batch(
            event(theirs.pk, 0, "note", {"text": "a"}),
            event(theirs.pk, 1, "decision_point", {"name": "faulty", "detail": "d"}),
            event(theirs.pk, 2, "note", {"text": "c"}),
        )
    )
    await socket_b.send_json_to(event(mine.pk, 0, "note", {"text": "another host's"}))
    acked, nacks = await answers_for(socket_a, 3)
    assert sorted(acked) == [(theirs.pk, 0), (theirs.pk, 2)], nacks
    assert [(n["seq"], n["retry"]) for n in nacks] == [(1, True)], nacks
    assert (await socket_b.receive_json_from(timeout=5))["type"] == "ack"
    await socket_a.disconnect()
    await socket_b.disconnect()


@pytest.mark.parametrize(
    "message",
    [
        {"type": "x" * 100_000, "v": 1},
        {"type": "claim", "v": "1" * 100_000},
    ],
)
async def test_an_error_quotes_what_the_worker_sent_in_short(message):
    """An `error` says what was wrong in words, quoting at most a short part of what the worker sent: a type or a
    `v` of 100,000 characters came back whole."""
    _, token = await sync_to_async(make_worker)()
    socket = await connected_worker(token, hello=False)
    await socket.send_json_to(message)
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "error" and len(reply["error"]) < 300, reply["error"][:200]
    await socket.disconnect()
