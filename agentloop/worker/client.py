"""The worker client: one websocket to the dashboard, one run per GPU, events spooled until acknowledged.

Threads: the main thread owns the socket (it reads, and answers); each run has its own thread, which hands its
events to the sender window under a lock. Every event is written to the spool before it is offered, so a lost
connection or a killed worker loses none: after a reconnect or a restart the spool is re-sent first (the server
stores each (run, seq) once). Runs whose traces are unfinished when the worker starts are resumed from their
traces. The window (`window.py`) sends an event at once while the link is idle and batches what accumulates
while frames await their answer, when the server's welcome offers `events`; it never sends a message over the
server's limit (`welcome.limits`).

An event refused for good (a final nack, or too large to send) is dropped from the spool and reported in a `note`
of its run, which the socket's thread emits through the run's own emitter while the run is still running here.
A run that cannot start ends with a `failed` status (`cannot_start`) in its own events. A server message the
worker cannot act on is logged and answered with `error`; the worker goes on serving (`messages.py`, the
handlers of each message type).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import queue
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import websockets
from websockets.sync.client import ClientConnection, connect

from agentloop import __version__
from agentloop.bank_source import bank_from_wire, stats_from_wire
from agentloop.config import Budgets, Goal, RunConfig
from agentloop.control import ControlInbox, Directive
from agentloop.errors import ConfigError, RunParked
from agentloop.events import Emitter
from agentloop.models.replay import recording_path, served_model_spec
from agentloop.protocol import FINISHED_STATUSES, PROTOCOL_VERSION, VERIFY_MODEL
from agentloop.review import InboxReviewer
from agentloop.sandbox import Sandbox
from agentloop.trace import TraceError, TraceWriter, read_trace
from agentloop.worker.handles import RunHandle, SeenDirectives
from agentloop.worker.messages import RESEND_AFTER_S, ServerMessages, event_key
from agentloop.worker.parking import DirectiveStore, ParkedRun, unapplied, waiting_review
from agentloop.worker.spool import Spool
from agentloop.worker.targets import choose_targets
from agentloop.worker.window import Frame

if TYPE_CHECKING:
    from agentloop.interfaces import EventSink, Model

log = logging.getLogger("agentloop.worker")
AUTH_REFUSED = 4401
EXIT_TOKEN_REFUSED = 3  # the server refused the token (403 at the handshake, or 4401)
EXIT_CERTIFICATE_REFUSED = 5  # the server's TLS certificate did not verify (4 is EXIT_NO_SANDBOX)
# A newer socket of this host replaced this worker's own (close code 4409, docs/protocol.md 2.1): another worker
# runs with this host's token. This worker never has two sockets open (it reconnects only after its socket is
# gone), so it stops rather than take the host back and fail the other's runs, back and forth.
SUPERSEDED = 4409
EXIT_SUPERSEDED = 6
PLAIN_WS_FLAG = "--insecure-plain-ws"
CA_FILE_ENV = "KSEEK_WORKER_CA_FILE"


def worker_url(server: str) -> str:
    url = server.rstrip("/")
    for old, new in (("http://", "ws://"), ("https://", "wss://")):
        if url.startswith(old):
            url = new + url[len(old) :]
    if not url.startswith(("ws://", "wss://")):
        url = "ws://" + url
    # The server's address, or its worker route already named: the route is `ws/worker/`, slash included (the
    # server routes nothing else there, and a handshake elsewhere fails with HTTP 500, which the worker retries).
    return url + "/" if url.endswith("/ws/worker") else url + "/ws/worker/"


def is_loopback(host: str) -> bool:
    """True for `localhost` and the loopback addresses: the only hosts a token may travel to in clear text."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: it may resolve anywhere, so it counts as remote
    # 0.0.0.0 and :: as a destination reach this host (`manage.py serve --host 0.0.0.0` starts its worker so).
    return address.is_loopback or address.is_unspecified


def tls_context(url: str, *, ca_file: str | None = None, allow_plain_ws: bool = False) -> ssl.SSLContext | None:
    """The TLS context a worker connects to `url` with (None for ws://), refusing what would leak the token.

    wss:// verifies the server's certificate and host name: against `ca_file` when given (a team's own CA),
    else against the system's trust store. ws:// sends the token in clear text, so it is allowed only to a
    loopback host, or where the operator says so explicitly (`allow_plain_ws`, the --insecure-plain-ws flag).
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme == "wss":
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"cannot read the CA file {ca_file}: {exc}") from None
        return context
    if ca_file:
        raise ConfigError(f"a CA file was given ({ca_file}) but {url} is plain ws://: use wss:// (or https://)")
    if not is_loopback(parts.hostname or "") and not allow_plain_ws:
        raise ConfigError(
            f"refusing to send the worker token in clear text to {parts.hostname} over plain ws://: connect with "
            f"wss:// (or https://) through the dashboard's TLS proxy, giving its CA with --ca-file or "
            f"${CA_FILE_ENV}; or, on a network you trust, pass {PLAIN_WS_FLAG}"
        )
    return None


class Worker(ServerMessages):
    def __init__(
        self,
        *,
        server: str,
        token: str,
        gpus: list[int],
        state_dir: Path,
        use_bwrap: bool | None = None,
        model_factory: Callable[[str, dict[str, Any]], Model] | None = None,
        agent_kwargs: dict[str, Any] | None = None,
        hidden: list[Path] | None = None,
        ca_file: str | None = None,
        allow_plain_ws: bool = False,
        targets: list[str] | None = None,
    ) -> None:
        from agentloop.models import make_model

        self.url = worker_url(server)
        # Before anything is sent anywhere: no token over plain ws:// to another host, no unverified wss://.
        self.tls = tls_context(self.url, ca_file=ca_file, allow_plain_ws=allow_plain_ws)
        self.ca_file = ca_file
        self.token = token
        self.gpus = list(gpus)
        # The task targets announced in every hello (targets.py): the server gives this worker only their runs.
        self.targets = list(targets) if targets is not None else choose_targets(self.gpus)
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        # What the agent's shell must not see (under bubblewrap): this worker's state (spool, other runs' traces)
        # and whatever the operator names, such as a dashboard's data folder on the same host.
        shell_hidden = [self.state_dir, *(Path(p) for p in hidden or [])]
        self.spool = Spool(self.state_dir / "spool.jsonl")
        self.seen = SeenDirectives(self.state_dir / "directives_seen.json")
        self.sandbox = Sandbox.choose(unsandboxed=use_bwrap is False, hidden=shell_hidden)
        self.model_factory = model_factory or make_model
        self.agent_kwargs = agent_kwargs or {}
        self.runs: dict[str, RunHandle] = {}
        self.parked: dict[str, ParkedRun] = {}  # runs waiting for a reviewer, holding no GPU (parking.py)
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._ws: ClientConnection | None = None
        # Until the server's welcome says whether it reads `events`, nothing is offered (the spool holds it all).
        self._window = None
        self._last_sent: dict[tuple[str, int], float] = {}  # pending events only: pruned when answered
        # (event, error): refused for good, to report
        self._refusals: queue.SimpleQueue[tuple[dict[str, Any], str]] = queue.SimpleQueue()
        self._claiming = False
        self._next_claim = 0.0
        self.stop = threading.Event()

    # ---------------------------------------------------------------------------------- sending
    def _send(self, message: dict[str, Any]) -> bool:
        ws = self._ws
        if ws is None:
            return False
        try:
            with self._send_lock:
                ws.send(json.dumps({"v": PROTOCOL_VERSION, **message}))
            return True
        except (websockets.exceptions.WebSocketException, OSError):
            return False

    def _send_frames(self, frames: list[Frame]) -> None:
        """Send what the window released; the caller holds _send_lock, so frames leave in the window's order."""
        ws = self._ws
        now = time.monotonic()
        for frame in frames:
            for key in frame.keys:
                self._last_sent[key] = now
            if ws is None:
                continue  # the spool re-sends them after the next hello
            try:
                ws.send(frame.text(PROTOCOL_VERSION))
            except (websockets.exceptions.WebSocketException, OSError):
                ws = None

    def _offer(self, events: list[dict[str, Any]]) -> None:
        with self._send_lock:
            if self._window is None:
                return
            self._send_frames(self._window.offer(*(_envelope(e) for e in events)))
            refused = self._window.take_refused()
        # Too large or too deep for any message the server reads: sent, it would be refused, or sent again forever.
        for key, why in refused:
            self._refuse_for_good(key, why)

    def _refuse_for_good(self, key: tuple[Any, ...], error: str) -> None:
        """Drop an event from the spool for good; the socket's thread reports it (`_report_refusals`)."""
        event = self.spool.drop(*key)
        self._last_sent.pop(event_key(*key), None)
        if event is not None:
            self._refusals.put((event, error))

    def _report_refusals(self) -> None:
        """A refused event is reported in a `note` of its run, emitted through the run's own emitter (thread-safe;
        never after the run's finished status). A run not running here (finished, or not started yet) has it
        logged only, and so has a refused note that reported a refusal itself (no note about that note)."""
        while True:
            try:
                event, error = self._refusals.get_nowait()
            except queue.Empty:
                return
            size = len(json.dumps(_envelope(event), separators=(",", ":"), default=str))
            text = f"the server refused event #{event['seq']} ({event['kind']}, {size} bytes): {error}"
            log.error("run %s: %s", event["run_id"], text)
            if event["kind"] == "note" and "refused_seq" in event["payload"]:
                log.error(
                    "run %s: event #%s reported a refusal itself; not reported again", event["run_id"], event["seq"]
                )
                continue
            handle = self.runs.get(str(event["run_id"]))
            note = {"text": text, "level": "error", "refused_seq": event["seq"]}
            if handle is None or handle.emitter is None or handle.emitter.emit_unless_finished("note", note) is None:
                log.warning(
                    "run %s is not running in this worker: the refusal of event #%s is logged only",
                    event["run_id"],
                    event["seq"],
                )

    def _settle(self, keys: list[tuple[Any, ...]]) -> None:
        """The server answered these (run_id, seq): their frames' places in the window are free again."""
        with self._send_lock:
            if self._window is not None:
                frames = []
                for run_id, seq in keys:
                    frames += self._window.settle(run_id, seq)
                self._send_frames(frames)

    def _event_sink(self, event: dict[str, Any]) -> None:
        self.spool.add(event)
        self._offer([event])

    # ----------------------------------------------------------------------------------- runs
    def _free_gpus(self) -> list[int]:
        with self._lock:
            busy = {h.gpu for h in self.runs.values() if h.thread.is_alive()}
            for rid in [r for r, h in self.runs.items() if not h.thread.is_alive()]:
                del self.runs[rid]
        return [g for g in self.gpus if g not in busy]

    def _run_dir(self, run_id: object) -> Path:
        return self.state_dir / "runs" / str(run_id)

    def _save_questions(self, run_id: object, run: dict[str, Any]) -> None:
        """Keep the assignment's bank and figures next to the run's trace, so that a resumed run asks from the
        same bank it started with."""
        run_dir = self._run_dir(run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        saved = {name: run[name] for name in ("bank", "question_stats") if run.get(name) is not None}
        if run.get("questions") is False:  # docs/protocol.md 2.11: this run asks no question
            saved["questions"] = False
        (run_dir / "questions.json").write_text(json.dumps(saved), encoding="utf-8")

    def _question_kwargs(self, run_id: object) -> dict[str, Any]:
        """The Agent's `bank` and `question_stats` from what the server sent (docs/protocol.md 2.3). Without a
        usable bank the agent reads the bank file; without figures it shows none."""
        try:
            saved = json.loads((self._run_dir(run_id) / "questions.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if saved.get("questions") is False:  # an empty bank: every decision point is noted, nothing is asked
            return {"bank": []}
        kwargs: dict[str, Any] = {}
        if "bank" in saved:
            entries, problems = bank_from_wire(saved["bank"])
            for problem in problems:
                log.warning("run %s: %s (left out)", run_id, problem)
            if entries:
                kwargs["bank"] = entries
            else:
                log.warning("run %s: the server's bank has no usable entry; using the bank file", run_id)
        if "question_stats" in saved:
            stats, problems = stats_from_wire(saved["question_stats"])
            for problem in problems:
                log.warning("run %s: %s (left out)", run_id, problem)
            kwargs["question_stats"] = stats
        return kwargs

    def _start_run(
        self,
        run_id: object,
        gpu: int,
        config: RunConfig | None,
        resume_events: list[dict[str, Any]] | None,
        fork: dict[str, Any] | None = None,
    ) -> None:
        from agentloop.agent import Agent, Host, Oversight
        from agentloop.verify import Verification

        run_dir = self._run_dir(run_id)
        inbox = ControlInbox()
        questions = self._question_kwargs(run_id)

        def work() -> None:
            trace: TraceWriter | None = None
            agent: Agent | Verification | None = None
            spec: str | None = None
            try:
                trace = TraceWriter(run_dir / "trace.jsonl")
                reviewer = self._prepare_inbox(run_dir, config, resume_events, inbox)
                # a resumed run (config None) has its trace's events
                spec = (
                    config.model
                    if config
                    else cast("list[dict[str, Any]]", resume_events)[0]["payload"]["config"]["model"]
                )
                host = Host(run_dir / "workspace", self.sandbox, {"CUDA_VISIBLE_DEVICES": str(gpu)})
                sinks: list[EventSink] = [trace, self._event_sink]
                if spec == VERIFY_MODEL:  # no agent: one full evaluation of the starting kernel (agentloop/verify.py)
                    agent = Verification(
                        run_id=run_id, config=config, resume_events=resume_events, sinks=sinks, host=host, inbox=inbox
                    )
                else:
                    agent = Agent(
                        run_id=run_id,
                        config=config,
                        resume_events=resume_events,
                        # a replay's recording is looked up in this worker's own folder, never at a path as sent
                        model=self.model_factory(served_model_spec(spec), {}),
                        sinks=sinks,
                        host=host,
                        oversight=Oversight(reviewer, inbox, **questions),
                        fork=fork,
                        **self.agent_kwargs,
                    )
                handle.emitter = agent.emitter
                outcome = agent.run()
                log.info("run %s ended: %s (%s)", run_id, outcome.status, outcome.reason)
            except RunParked as parked:
                log.info("run %s parked: %s; its GPU is free for other runs", run_id, parked)
                self._park(run_id)
            except Exception as exc:
                log.exception("run %s could not run", run_id)
                # The run must not stay "running" with the reason only in this log: it ends failed, in its events.
                problem = f"{type(exc).__name__}: {exc}" + (f" (model {spec})" if spec else "")
                if agent is None:
                    sinks = [trace, self._event_sink] if trace is not None else [self._event_sink]
                    self._fail_run(
                        Emitter(run_id, sinks, next_seq=len(resume_events or [])),
                        "cannot_start",
                        f"the worker cannot start this run: {problem}",
                    )
                else:
                    self._fail_run(agent.emitter, "internal_error", f"the agent stopped with an error: {problem}")
            finally:
                if trace is not None:
                    trace.close()

        thread = threading.Thread(target=work, name=f"run-{run_id}", daemon=True)
        handle = RunHandle(run_id, gpu, thread, inbox)
        with self._lock:
            self.runs[str(run_id)] = handle
        thread.start()

    @staticmethod
    def _prepare_inbox(
        run_dir: Path, config: RunConfig | None, resume_events: list[dict[str, Any]] | None, inbox: ControlInbox
    ) -> InboxReviewer:
        """Give a resumed run the directives acknowledged before the worker stopped that it has not acted on yet,
        and return its reviewer. The proposal that waits (a parked run's) has what is left of its timeout, counted
        from the proposal, not from this life of the run; every later proposal has the whole timeout."""
        if not resume_events:
            assert config is not None  # a new run (no trace to resume) comes with its config
            return InboxReviewer(config.review_timeout_s, park=True)
        for message in unapplied(DirectiveStore(run_dir).kept(), resume_events):
            inbox.put(Directive.from_wire(message))
        timeout_s = RunConfig.from_dict(resume_events[0]["payload"]["config"]).review_timeout_s
        waiting = waiting_review(resume_events)
        if waiting is None or waiting.question_ref is None:
            return InboxReviewer(timeout_s, park=True)
        return InboxReviewer(timeout_s, park=True, time_left={waiting.question_ref: waiting.timeout_left(time.time())})

    def _park(self, run_id: object) -> None:
        """The run's agent raised RunParked: it waits for its reviewer, holding no GPU. A directive that wakes it
        may have been kept while the agent was parking: it is ready at once then."""
        events = read_trace(self._run_dir(run_id) / "trace.jsonl")
        parked = waiting_review(events)
        if parked is None:  # cannot happen from RunParked; resumed at once rather than lost
            log.error("run %s parked but its trace shows no waiting question; resuming it", run_id)
            parked = ParkedRun(run_id, "", None, ready=True)
        with self._lock:
            kept = unapplied(DirectiveStore(self._run_dir(run_id)).kept(), events)
            parked.ready = parked.ready or any(parked.woken_by(m) for m in kept)
            self.parked[str(run_id)] = parked

    def _wake_parked(self) -> bool:
        """Resume the parked runs whose decision (or stop, or timeout) came, while a GPU is free. True while one
        is due but waits for a GPU: no new run is claimed before it."""
        now = time.time()
        with self._lock:
            due = [(key, parked.run_id) for key, parked in self.parked.items() if parked.due(now)]
        for key, run_id in due:  # the run's own id (an integer for a server's run), not its key's string
            free = self._free_gpus()
            if not free:
                return True
            with self._lock:
                self.parked.pop(key, None)
            log.info("resuming parked run %s: its reviewer decided (or it was stopped, or timed out)", run_id)
            self._start_run(run_id, free[0], None, read_trace(self._run_dir(run_id) / "trace.jsonl"))
        return False

    def _fail_run(self, emitter: Emitter, reason: str, detail: str) -> None:
        """End a run failed, with the reason, through its events (trace and spool), unless it has ended already."""
        log.error("run %s failed (%s): %s", emitter.run_id, reason, detail)
        try:
            emitter.emit_unless_finished("status", {"status": "failed", "reason": reason, "detail": detail})
        except Exception:
            log.exception("run %s: its failure could not be recorded", emitter.run_id)

    def _cannot_start(self, run_id: object, detail: str) -> None:
        """An assignment the worker cannot run: its first and last event says why (seq 0: nothing was emitted)."""
        trace = TraceWriter(self._run_dir(run_id) / "trace.jsonl")
        try:
            self._fail_run(Emitter(run_id, [trace, self._event_sink]), "cannot_start", detail)
        finally:
            trace.close()

    def resume_unfinished(self) -> None:
        """Runs this worker was running when it stopped: resume each from its trace."""
        for trace_path in sorted((self.state_dir / "runs").glob("*/trace.jsonl")):
            try:
                events = read_trace(trace_path)
            except TraceError as exc:
                log.error("cannot resume from %s: %s", trace_path, exc)
                continue
            missing = self.spool.add_missing(events)
            if missing:
                log.info(
                    "spooled %d event(s) of run %s that its trace had but the spool had not",
                    missing,
                    events[0]["run_id"] if events else "?",
                )
            if not events or any(e["kind"] == "status" and e["payload"]["status"] in FINISHED_STATUSES for e in events):
                continue
            parked = waiting_review(events)
            if parked is not None:
                # Waiting for its reviewer: parked, not resumed, unless a directive kept before the stop wakes it.
                kept = unapplied(DirectiveStore(trace_path.parent).kept(), events)
                parked.ready = any(parked.woken_by(m) for m in kept)
                self.parked[str(parked.run_id)] = parked
                log.info("run %s waits for its reviewer: parked", parked.run_id)
                continue
            free = self._free_gpus()
            if not free:
                log.error("run %s is unfinished but no GPU is free to resume it", events[0]["run_id"])
                continue
            log.info("resuming run %s from its trace", events[0]["run_id"])
            self._start_run(events[0]["run_id"], free[0], None, events)

    def _assignment(self, run: dict[str, Any]) -> RunConfig:
        from gpu_harness import get_task

        try:
            filename = (
                _recorded_kernel_filename(run)
                or run.get("starting_kernel_name")
                or _starting_kernel_name(get_task(run["task"]).starting_kernel)
            )
            goal = run.get("goal") or {}
            return RunConfig(
                task=run["task"],
                goal=Goal(goal.get("baseline", ""), goal.get("speedup", 0)),
                model=run["model"],
                starting_kernel=run["starting_kernel"],
                kernel_filename=filename,
                budgets=Budgets.from_dict({k: v for k, v in (run.get("budgets") or {}).items() if v is not None}),
                review_mode=run.get("review_mode") or "review",
                review_timeout_s=run.get("review_timeout_s"),
            )
        except KeyError as exc:
            raise ConfigError(f"unusable assignment: no {exc.args[0]!r}") from None
        except (ValueError, TypeError, AttributeError) as exc:
            raise ConfigError(f"unusable assignment: {exc}") from None

    # ------------------------------------------------------------------------------- the socket
    def _claim_if_free(self) -> None:
        if self.stop.is_set() or self._wake_parked():
            return
        if self._claiming or time.monotonic() < self._next_claim:
            return
        free = self._free_gpus()
        if free and self._send({"type": "claim", "gpu": free[0]}):
            self._claiming = True
            self._claim_gpu = free[0]

    def _session(self, ws: ClientConnection) -> None:
        with self._send_lock:
            self._ws = ws
            self._window = None  # until the welcome; then the spool is offered, in (run, seq) order
        self._claiming = False
        # The runs still ours: those running here, and those whose last events wait in the spool (a run that has
        # just finished is not running, but the server must not count it lost before its final status arrives).
        running = {h.run_id for h in self.runs.values() if h.thread.is_alive()}
        running |= {parked.run_id for parked in self.parked.values()}  # ours still, without a GPU
        spooled = {event["run_id"] for event in self.spool.pending()}
        active = [{"run_id": run_id, "last_seq": None} for run_id in sorted(running | spooled, key=str)]
        self._send(
            {
                "type": "hello",
                "host": socket.gethostname(),
                "gpus": [f"gpu {g}" for g in self.gpus],
                "targets": self.targets,
                "active_runs": active,
                "agentloop_version": __version__,
            }
        )
        while not self.stop.is_set():
            self._claim_if_free()
            self._resend_unanswered()
            self._report_refusals()
            try:
                raw = ws.recv(timeout=0.5)
            except TimeoutError:
                continue
            self._receive(raw)
            self._report_refusals()

    def _resend_unanswered(self) -> None:
        """Events the server has not answered for RESEND_AFTER_S (a lost frame, an `error` reply, a retry nack
        whose pause is over) are offered again."""
        with self._send_lock:
            if self._window is None:
                return
            self._send_frames(self._window.expire(RESEND_AFTER_S))
        now = time.monotonic()
        due = [
            e
            for e in self.spool.pending()
            if now - self._last_sent.get((str(e["run_id"]), int(e["seq"])), 0) > RESEND_AFTER_S
        ]
        if due:
            self._offer(due)

    def serve(self) -> int:
        self.resume_unfinished()
        backoff = 1.0
        while not self.stop.is_set():
            try:
                with connect(
                    self.url,
                    additional_headers={"Authorization": f"Bearer {self.token}"},
                    max_size=64 * 2**20,
                    open_timeout=10,
                    ssl=self.tls,
                ) as ws:
                    backoff = 1.0
                    log.info("connected to %s", self.url)
                    self._session(ws)
            except websockets.exceptions.InvalidStatus as exc:
                if exc.response.status_code in (401, 403):
                    log.error("the server refused the worker token (HTTP %s)", exc.response.status_code)
                    return EXIT_TOKEN_REFUSED
                log.warning("connection refused: %s", exc)
            except websockets.exceptions.ConnectionClosed as exc:
                if exc.rcvd is not None and exc.rcvd.code == AUTH_REFUSED:
                    log.error("the server refused the worker token")
                    return EXIT_TOKEN_REFUSED
                if exc.rcvd is not None and exc.rcvd.code == SUPERSEDED:
                    log.error(
                        "another connection with this host's token replaced this worker's (close 4409): is a second "
                        "worker running with this token? stopping; this host's runs are the newer worker's now"
                    )
                    return EXIT_SUPERSEDED
                log.warning("connection lost: %s", exc)
            except ssl.SSLCertVerificationError as exc:
                # Not a passing fault: the server is not the one this worker was told to trust (or the CA is the
                # wrong one). Retrying would not help; the token was not sent (TLS fails before the handshake).
                trusted = f"the CA in {self.ca_file}" if self.ca_file else "the system's trusted CAs"
                log.error(
                    "refusing %s: its TLS certificate does not verify against %s (%s); give the CA that signed "
                    "the dashboard's certificate with --ca-file or $%s",
                    self.url,
                    trusted,
                    exc.verify_message or exc.reason or exc,
                    CA_FILE_ENV,
                )
                return EXIT_CERTIFICATE_REFUSED
            except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
                log.warning("cannot reach %s: %s", self.url, exc)
            finally:
                with self._send_lock:
                    self._ws = None
                    self._window = None
            if self.stop.wait(backoff * (0.5 + random.random() / 2)):
                break
            backoff = min(30.0, backoff * 2)
        return 0


def _starting_kernel_name(path: Path | None) -> str:
    if path is None:  # (as Path(None) did: the assignment is unusable)
        raise TypeError("the task names no starting kernel")
    return path.name


def _envelope(event: dict[str, Any]) -> dict[str, Any]:
    """The event's wire fields (docs/protocol.md 2.2: the envelope of 1.1 minus `v`, which is the message's)."""
    return {k: event[k] for k in ("run_id", "seq", "kind", "ts", "payload", "usage")}


def _recorded_kernel_filename(run: dict[str, Any]) -> str | None:
    """For a replay model, the kernel file name of the recording: its recorded tool calls name that file (the
    editor writes `kernel.cpp`, evaluate judges the default kernel file), so the run must use the same name, not
    the task's (`naive.cpp`), or the replayed edits would never reach the file that is judged."""
    spec = run.get("model") or ""
    if not spec.startswith("replay:"):
        return None
    # ConfigError (the assignment cannot start) for a name that is no recording of this worker's folder.
    path = recording_path(spec[len("replay:") :])
    try:
        events = read_trace(path)
    except TraceError:
        return None  # the replay model reports the unreadable trace itself
    config = (
        next((e["payload"].get("config") for e in events if e["kind"] == "status" and e["payload"].get("config")), None)
        or {}
    )
    return config.get("kernel_filename") if config.get("task") == run.get("task") else None


def run_worker(
    *,
    server: str,
    token: str,
    gpus: list[int],
    state_dir: Path,
    use_bwrap: bool | None = None,
    hidden: list[Path] | None = None,
    ca_file: str | None = None,
    allow_plain_ws: bool = False,
    targets: str | None = None,
    force_targets: bool = False,
) -> int:
    """`targets`: the operator's comma-separated list (None: what the host is found to serve)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    served = choose_targets(gpus, targets, force=force_targets)
    log.info("serving targets: %s", ", ".join(served))
    worker = Worker(
        server=server,
        token=token,
        gpus=gpus,
        state_dir=state_dir,
        use_bwrap=use_bwrap,
        hidden=hidden,
        ca_file=ca_file,
        allow_plain_ws=allow_plain_ws,
        targets=served,
    )
    # Fail closed before taking any run: its agent's commands and kernels would have nowhere safe to run.
    worker.sandbox.require()
    if worker.sandbox.mode == "none":
        log.warning(
            "unsandboxed (--unsandboxed): the agents' commands and kernels run as this user with no "
            "isolation and can read this worker's token and API key"
        )
    try:
        return worker.serve()
    except KeyboardInterrupt:
        worker.stop.set()
        return 0
