"""The replay model: plays back the model turns of a recorded trace, in order, while tools run for real.

Turns and question-selection calls are played from separate queues, so a run that asks the same questions at
the same points replays exactly. A replay ends stopped, never failed, when the recording has nothing more to play
(ReplayFinished, `replay_finished`, saying how the recorded run ended): when the run wants a turn after the last
recorded one (it has played the whole recording), and when it makes a call the recording never made (a question
selection: a reviewer vetoed the recorded question, and the agent proposes another), where the run has gone
another way than the recording. An edited question plays on: the recording's turns follow it as they followed
the question asked when it was recorded.
Token counts are replayed as recorded (budgets behave as in the recording); the cost is 0: nothing was paid.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from agentloop.errors import ConfigError, ReplayFinished
from agentloop.interfaces import Model
from agentloop.models.reply import ModelReply, Usage
from agentloop.protocol import FINISHED_STATUSES as FINISHED
from agentloop.trace import read_trace

# The recordings a worker may replay: the files directly in this package's `replays/` folder (the shipped ones,
# which the server's start form lists). The server names one, as its start form writes it
# (`replay:agentloop/replays/NAME.jsonl`) or by its bare name (`replay:NAME.jsonl`); the worker opens only that
# file in its own folder, never a path the server chose (issue 34: `replay:/etc/passwd` once opened that file).
RECORDINGS = Path(__file__).resolve().parent.parent / "replays"
RECORDINGS_PREFIX = "agentloop/replays/"


def recording_path(name: str, folder: Path = RECORDINGS) -> Path:
    """The recording `name` names in `folder`: a `.jsonl` file directly in it, not a symlink. ConfigError for
    any other name (a path, `..`, a hidden file) or a file that is missing or leads out of the folder."""
    bare = name[len(RECORDINGS_PREFIX) :] if name.startswith(RECORDINGS_PREFIX) else name
    if not bare.endswith(".jsonl") or bare.startswith(".") or "\\" in bare or Path(bare).name != bare:
        raise ConfigError(
            f"replay:{name:.200} names no recording: a replay model names a recording in {RECORDINGS_PREFIX} "
            "(replay:agentloop/replays/NAME.jsonl), not a path"
        )
    path = folder / bare
    # A symlink could lead anywhere on this host, whatever its name: only plain files of the folder are replayed.
    if path.is_symlink() or not path.is_file() or path.resolve().parent != folder.resolve():
        raise ConfigError(f"replay:{name:.200}: this worker holds no recording {bare!r} in {RECORDINGS_PREFIX}")
    return path


def served_model_spec(spec: str, folder: Path = RECORDINGS) -> str:
    """The model spec a worker may run for the server's `spec`: a replay's resolved to the recording it names in
    the worker's own folder (`recording_path`, ConfigError when it names none); any other spec as it is."""
    if not spec.startswith("replay:"):
        return spec
    return f"replay:{recording_path(spec[len('replay:') :], folder)}"


class ReplayModel(Model):
    def __init__(self, events: list[dict[str, Any]], name: str = "replay") -> None:
        self.name = name
        self.queues: dict[str, deque[dict[str, Any]]] = {}
        pending_usage: dict[str, deque[dict[str, Any]]] = {}
        for event in events:
            p = event["payload"]
            if event["kind"] == "usage":
                pending_usage.setdefault(p.get("purpose", "turn"), deque()).append(p)
            elif event["kind"] == "model_message":
                self.queues.setdefault(p.get("purpose", "turn"), deque()).append(p)
        self.usages = pending_usage
        self.recorded_model = next((e["payload"].get("model") for e in events if e["kind"] == "model_message"), None)
        finals = [e["payload"] for e in events if e["kind"] == "status" and e["payload"].get("status") in FINISHED]
        self.recorded_end = finals[-1] if finals else None

    @classmethod
    def from_trace(cls, path: str | Path) -> ReplayModel:
        return cls(read_trace(path), name=f"replay:{path}")

    def skip_played(self, events: list[dict[str, Any]]) -> None:
        """Drop the recorded calls a resumed run already made. A turn was made once its model message is in the
        trace; a question selection once the proposal it led to is: one whose proposal the crash lost is made
        again by the resumed run, and gets the same recorded answer."""
        played = {
            "turn": sum(e["kind"] == "model_message" and e["payload"].get("purpose", "turn") == "turn" for e in events),
            # a person's question (a fork's, by "human") was not a selection call
            "select_question": sum(
                e["kind"] == "question_proposed" and e["payload"].get("by") != "human" for e in events
            ),
        }
        for purpose, count in played.items():
            for queue in (self.queues.get(purpose), self.usages.get(purpose)):
                if queue is None:
                    continue
                for _ in range(min(count, len(queue))):
                    queue.popleft()

    def _finished_text(self, purpose: str = "turn") -> str:
        text = "the recording has no more turns"
        if purpose != "turn":
            text = (
                f"the recording has no {purpose} call here: this run went another way than the recording "
                "(a vetoed question is proposed again, which the recorded run never did)"
            )
        if self.recorded_end:
            ended = " ".join(str(self.recorded_end.get(k) or "") for k in ("status", "reason")).strip()
            text += f" (the recorded run ended {ended})"
        return text

    def query(
        self, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], purpose: str
    ) -> ModelReply:
        queue = self.queues.get(purpose)
        if not queue:
            raise ReplayFinished(self._finished_text(purpose))
        recorded = queue.popleft()
        usage_queue = self.usages.get(purpose)
        u = usage_queue.popleft() if usage_queue else {}
        usage = Usage(
            tokens_in=int(u.get("tokens_in") or 0),
            tokens_out=int(u.get("tokens_out") or 0),
            cache_read_tokens=int(u.get("cache_read_tokens") or 0),
            cache_write_tokens=int(u.get("cache_write_tokens") or 0),
            cost_usd=0.0,
        )
        return ModelReply(
            content=[dict(b) for b in recorded.get("content") or []],
            stop_reason=recorded.get("stop_reason", "end_turn"),
            model=recorded.get("model") or self.name,
            usage=usage,
        )
