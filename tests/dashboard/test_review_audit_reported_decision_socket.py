"""Finding 2 over the worker socket: a worker written from docs/protocol.md alone receives rita's veto as a
directive, acknowledges it, and reports that a reviewer approved the question instead. The event is stored (ack),
the question becomes what the agent asked, credited to no reviewer, and rita's veto is kept as not acted on."""

import pytest
from asgiref.sync import sync_to_async

from runs.models import Question, QuestionStatus
from runs.services import question_review
from tests.dashboard.helpers import connected_worker, event, make_user, make_worker, question_payload
from tests.dashboard.test_worker_socket import claimed_run

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_worker_reporting_another_reviewers_decision_than_the_directive_is_recorded_as_it_acted():
    _, token = await sync_to_async(make_worker)()
    rita = await sync_to_async(make_user)("rita", "reviewer")
    socket = await connected_worker(token)
    run = await claimed_run(socket, review_mode="review")
    await socket.send_json_to(event(run.pk, 0, "question_proposed", question_payload("q-1")))
    assert (await socket.receive_json_from(timeout=5))["type"] == "ack"
    question = await sync_to_async(Question.objects.get)(run=run)
    await sync_to_async(question_review)(question=question, reviewer=rita, decision="veto")
    directive = await socket.receive_json_from(timeout=5)
    assert (directive["action"], directive["decision"], directive["reviewer"]) == ("question_decision", "veto", "rita")
    await socket.send_json_to({"type": "directive_ack", "v": 1, "id": directive["id"]})

    decided = {"question_ref": "q-1", "action": "approve", "by": "reviewer", "reviewer": "rita"}
    await socket.send_json_to(event(run.pk, 1, "question_decided", decided))
    assert await socket.receive_json_from(timeout=5) == {"type": "ack", "v": 1, "run_id": run.pk, "seq": 1}
    question = await sync_to_async(Question.objects.get)(pk=question.pk)
    assert (question.status, question.reviewer_id) == (QuestionStatus.APPROVED, None)
    assert question.unheard_decision.startswith("vetoed by rita at ")
    assert "(approve by reviewer rita)" in question.unheard_decision
    await socket.disconnect()
