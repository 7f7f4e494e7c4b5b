"""Runs, their steps, the questions asked in them, and the kernels they produce.

Writes go through `runs.services`, reads through selectors (`runs.selectors`, each page area's `selectors.py`);
views, consumers and commands call those and never save models directly, so that every write keeps the invariants
written down there.
"""

from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from agentloop.protocol import EVENT_KINDS, RUN_STATUSES
from agentloop.protocol import FINISHED_STATUSES as protocol_finished_statuses
from gpu_harness import figures
from gpu_harness.result import STATUSES
from questionbank.models import DecisionPoint, QuestionCategory


class Target(models.TextChoices):
    CUDA_SM90 = "cuda-sm90", "CUDA, Hopper (sm_90a)"
    CPU = "cpu", "CPU (C++)"


class Task(models.Model):
    """A kernel task as the harness defines it (gpu_harness/tasks): what to make faster, and the goal."""

    name = models.SlugField(max_length=80, unique=True, help_text="The harness's task name")
    title = models.CharField(max_length=200, blank=True)
    target = models.CharField(max_length=20, choices=Target.choices)
    description = models.TextField(blank=True)
    starting_kernel = models.TextField(help_text="Source of the kernel a run starts from")
    starting_kernel_name = models.CharField(max_length=200, blank=True, help_text="File name of the starting kernel")
    goal_baseline = models.CharField(max_length=80, help_text="The baseline the goal is measured against")
    goal_speedup = models.FloatField(help_text="Geometric-mean speedup over the goal baseline that ends a run")
    # The server's own list of what a full evaluation covers: a run is accepted as succeeded only on a stored
    # evaluation that covers every one of these (runs.services.kernels.evaluation_meets_goal).
    scenario_ids = models.JSONField(default=list, blank=True, help_text="Ids of the task's full scenario set")
    # What the task pages show, as the harness summarises it (gpu_harness.tasks.summary.task_summary): ABI,
    # scenarios with their parameters, the quick subset, baselines, tolerance. Stored whole by sync_tasks.
    spec = models.JSONField(default=dict, blank=True, help_text="The harness's summary of the task")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(target__in=Target.values), name="task_target_valid"),
            models.CheckConstraint(condition=Q(goal_speedup__gt=0), name="task_goal_speedup_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def libraries(self) -> list[str]:
        """The baselines the task marks as libraries (its spec, from the harness): what a verdict's best_library
        is the best of when it timed them all (gpu_harness.figures.library_scope)."""
        return [str(name) for name in (self.spec or {}).get("libraries") or []]


class WorkerHost(models.Model):
    """A GPU host that runs agents. Its token is stored only as a hash; the plain token is shown once."""

    name = models.SlugField(max_length=80, unique=True)
    gpus = models.JSONField(default=list, blank=True, help_text="GPU names, one per device")
    # The task targets (Target values) its newest hello announced; a run goes only to a host that serves its
    # task's target (run_claim). Empty until a hello names a known one, and then the host is given no run.
    targets = models.JSONField(default=list, blank=True, help_text="Task targets it serves, from its hello")
    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the token")
    token_prefix = models.CharField(max_length=12, help_text="First characters of the token, to tell tokens apart")
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True, help_text="When its newest socket opened")
    # Whether the host is connected now, for the people watching its runs. A host has one socket at a time, but
    # a reconnecting host may open its new socket before the server has noticed that the old one died: only the
    # socket named here can mark the host disconnected, so a late close of an old socket changes nothing.
    connection = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="Channel name of the socket the host is connected through; empty when none",
    )
    disconnected_at = models.DateTimeField(null=True, blank=True)
    # Why its worker process did not start, as the command that starts it found (`serve`, for the local worker:
    # no working sandbox), with what to do; the pages show it beside the host and under the runs that wait.
    start_problem = models.TextField(
        blank=True, default="", help_text="Why its worker did not start and how to fix it; empty when it started"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def is_connected(self) -> bool:
        """As far as the server knows: a server process killed outright leaves its sockets marked connected until
        their hosts connect again (each new socket replaces the name)."""
        return bool(self.connection)


# Statuses and kinds are the protocol's (agentloop/protocol.py): each choice's name is its value in capitals
# (RunStatus.WAITING_REVIEW == "waiting_review"), its label the protocol's.
RunStatus = models.TextChoices(  # type: ignore[call-overload]  # django-stubs: no overload for the functional API's (value, label) pairs
    "RunStatus", [(value.upper(), (value, label)) for value, label in RUN_STATUSES.items()]
)

FINISHED_STATUSES = tuple(RunStatus(status) for status in protocol_finished_statuses)
# A worker host holds a run in these (waiting on a reviewer or paused, it still has the run and its state).
HELD_STATUSES = (RunStatus.RUNNING, RunStatus.WAITING_REVIEW, RunStatus.PAUSED)


class ReviewMode(models.TextChoices):
    AUTO = "auto", "Self-asked questions are approved automatically"
    REVIEW = "review", "A reviewer decides every self-asked question"
    REVIEW_TIMEOUT = "review_timeout", "A reviewer decides, or it is approved after a timeout"


# The settings a study can vary (runs/services/studies.py), with the words its page names each by.
STUDY_SETTINGS = {
    "questions": "questions (on or off)",
    "review_mode": "review mode",
    "model": "model",
    "budget_steps": "step budget",
    "budget_tokens": "token budget",
    "budget_evaluations": "evaluation budget",
    "budget_wall_s": "wall-time budget (s)",
}


# The largest value of each whole-number run setting, one ceiling for every way in: the start form, a study's
# values and the settings its runs share, `start_suite_study`. Each is far above any real run and far below what
# its column holds (2,147,483,647 for a PositiveIntegerField on PostgreSQL), so a value too large is refused with
# its name rather than stored by one way in and refused by another, or overflowing at the insert.
RUN_SETTING_MAX = {
    "review_timeout_s": 7 * 86_400,
    "budget_steps": 1_000_000,
    "budget_tokens": 10**12,
    "budget_wall_s": 30 * 86_400,
    "budget_evaluations": 100_000,
}
# The largest cost budget, in USD (its column holds 10 digits, 4 of them decimals).
BUDGET_COST_USD_MAX = 100_000


# How many runs one comparison shows (the compare page), and so how many values a study of runs has.
COMPARE_MIN, COMPARE_MAX = 2, 8


class Study(models.Model):
    """Runs of one task started together that differ in one setting (an ablation, docs/fork.md): the compare
    page opens on them (`/runs/compare/?study=ID`)."""

    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="studies")
    setting = models.CharField(max_length=40, help_text="The one setting its runs differ in")
    values = models.JSONField(default=list, help_text="That setting's value in each run, in the runs' order")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="studies"
    )
    # The suite study it is one problem of (its task's runs of each arm); null for a study of one task alone.
    suite_study = models.ForeignKey(
        "SuiteStudy", null=True, blank=True, on_delete=models.SET_NULL, related_name="studies"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return f"study {self.pk} ({self.task.name}: {self.setting})"


class SuiteFormat(models.TextChoices):
    """Where a suite's problems came from: the benchmark whose files its manifest lists (runs/suite_manifest.py)."""

    KERNELBENCH = "kernelbench", "KernelBench"
    GPUMODE = "gpumode", "GPU MODE"
    FLASHINFER = "flashinfer", "FlashInfer"


class Suite(models.Model):
    """A benchmark's problems imported as task folders together (a KernelBench level: `python -m gpu_harness task
    import-kernelbench`), read from the manifest (suite.json) of its folder by `sync_tasks` (docs/tasks.md)."""

    name = models.CharField(max_length=200, unique=True, help_text="The suite folder's name")
    source = models.CharField(
        max_length=300, blank=True, help_text="What it was imported from, e.g. KernelBench level1"
    )
    format = models.CharField(max_length=20, choices=SuiteFormat.choices, default=SuiteFormat.KERNELBENCH)
    folder = models.CharField(max_length=1000, blank=True, help_text="The folder its manifest was read from")
    manifest = models.JSONField(default=dict, help_text="suite.json as it was read")
    created_at = models.DateTimeField(auto_now_add=True)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(format__in=SuiteFormat.values), name="suite_format_valid")]

    def __str__(self) -> str:
        return self.name


class SuiteProblem(models.Model):
    """One problem file of a suite and what became of it: the task it imported as, or why it did not."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="problems")
    position = models.PositiveIntegerField(help_text="Its place in the manifest (KernelBench's order)")
    file = models.CharField(max_length=300)
    name = models.CharField(max_length=120, blank=True, help_text="The task name it imports as")
    outcome = models.CharField(max_length=30, help_text="imported, imported, not checked, refused or check failed")
    reason = models.TextField(blank=True, help_text="Why it was not imported (or not checked)")
    scenarios = models.JSONField(default=list, blank=True, help_text="Its scenarios' cases, as imported")
    # The dashboard's task of that name, when it has one (sync_tasks loads the folder before the manifest).
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="suite_problems")

    class Meta:
        ordering = ["suite", "position"]
        constraints = [models.UniqueConstraint(fields=["suite", "file"], name="suite_problem_file_unique")]

    def __str__(self) -> str:
        return f"{self.suite.name}/{self.file} ({self.outcome})"


class SuiteStudy(models.Model):
    """A study over a suite: one Study per imported problem, each of N runs that differ in one setting (the
    arms). docs/fork.md, "Suite studies"."""

    suite = models.ForeignKey(Suite, on_delete=models.PROTECT, related_name="studies")
    setting = models.CharField(max_length=40, help_text="The one setting its arms differ in")
    values = models.JSONField(default=list, help_text="That setting's value in each arm")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="suite_studies"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "suite studies"

    def __str__(self) -> str:
        return f"suite study {self.pk} ({self.suite.name}: {self.setting})"


class Run(models.Model):
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.QUEUED)
    status_reason = models.CharField(max_length=200, blank=True, help_text="Why the run has its status, when it says")
    model = models.CharField(max_length=120, help_text="Model id, e.g. claude-sonnet-4-6 or replay:FILE")
    starting_kernel = models.TextField(help_text="Source this run starts from (a copy: the task may change)")
    # The goal, when this run's differs from its task's (blank: the task's goal).
    goal_baseline = models.CharField(max_length=80, blank=True)
    goal_speedup = models.FloatField(null=True, blank=True)
    # Budgets: any that is reached ends the run. Null means no limit of that kind.
    budget_steps = models.PositiveIntegerField(null=True, blank=True)
    budget_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    budget_cost_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    budget_wall_s = models.PositiveIntegerField(null=True, blank=True)
    budget_evaluations = models.PositiveIntegerField(null=True, blank=True)
    review_mode = models.CharField(max_length=20, choices=ReviewMode.choices, default=ReviewMode.REVIEW)
    review_timeout_s = models.PositiveIntegerField(null=True, blank=True)
    # Best verified speedup over the run's goal baseline (`goal`), and over every baseline measured (name ->
    # speedup): kept by runs.services.kernels through gpu_harness.figures.
    best_speedup = models.FloatField(null=True, blank=True)
    best_speedups = models.JSONField(default=dict, blank=True)
    # The 95% interval of each of those bests (baseline -> [low, high]), the geomean interval of the evaluation
    # that set it (gpu_harness.figures.best_intervals_after); absent where that evaluation had none. A best is
    # never shown without it: "no difference" where it holds 1.0 (issue 34, item 4).
    best_intervals = models.JSONField(default=dict, blank=True)
    # The baselines whose best's noise is unknown (gpu_harness.figures.best_noise_unknown_after): the evaluation
    # that set it had no interval for that baseline although it measured some (figures.noise_unknown). Without
    # this a best lacking its interval could be one from before intervals (held to its point) or one inside
    # unknown noise, and a list would write both as a bare point; it writes the latter "(noise unknown)".
    best_noise_unknown = models.JSONField(default=list, blank=True)
    # What the best over best_library is the best of, where the evaluation that set it did not time every library
    # of the task (gpu_harness.figures.library_scope: "best of eager only; not timed: compile, quack"); "" else.
    best_library_scope = models.CharField(max_length=300, blank=True, default="")
    # Running totals kept by step_record, so that list pages need no aggregate over 12,000 steps.
    last_seq = models.IntegerField(default=-1, help_text="Highest stored step sequence number")
    step_count = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    # A usage event of the run had no cost (its model's price unknown, docs/protocol.md 1.1): cost_usd is then a
    # floor, and every page and export says so. A column rather than a read of the usage steps: the runs list
    # shows it per row, and the event store sets it with the totals, once per stored row (runs/services/steps.py),
    # so a re-send, a replay or a trace import sets it exactly when it adds to the totals.
    cost_incomplete = models.BooleanField(default=False)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs_started"
    )
    worker = models.ForeignKey(WorkerHost, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    # Which of its host's GPUs the run holds, as the worker's claim named it ("gpu 1", as in the host's `gpus`);
    # blank before a claim, or when the worker's claim named none.
    worker_gpu = models.CharField(max_length=20, blank=True, help_text="The GPU of its host the run holds, e.g. gpu 1")
    # Where an imported run came from (runs.services.trace_import): the trace's file name, and the run it
    # records where the trace names one. Blank: a run this site ran itself.
    imported_from = models.CharField(max_length=300, blank=True, help_text="The trace it was imported from, if any")
    # The original run an imported trace records (runs.services.trace_import.trace_origin), the same for every
    # import of the same run, so that figures over runs count it once. Blank: the run is its own origin.
    origin = models.CharField(max_length=200, blank=True, db_index=True, help_text="The original run it records")
    # A fork continues its parent from one of its steps (docs/fork.md): `fork_seq` is that step's number, `fork`
    # the assignment's `fork` object (docs/protocol.md 2.10) as runs.services.forks made it (conversation,
    # files, decision), kept whole so that the fork can be assigned even if its parent is deleted.
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks", help_text="The run it forks"
    )
    fork_seq = models.PositiveIntegerField(null=True, blank=True, help_text="The parent's step it continues from")
    fork = models.JSONField(null=True, blank=True, help_text="What the fork starts from (docs/protocol.md 2.10)")
    # False: the agent asks no question at its decision points (the assignment's `questions`, docs/protocol.md 2.11).
    asks_questions = models.BooleanField(default=True, help_text="Whether the agent asks questions at decision points")
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RunStatus.values), name="run_status_valid"),
            models.CheckConstraint(condition=Q(review_mode__in=ReviewMode.values), name="run_review_mode_valid"),
            models.CheckConstraint(
                condition=Q(best_speedup__isnull=True) | Q(best_speedup__gte=0), name="run_best_speedup_nonnegative"
            ),
            models.CheckConstraint(condition=Q(last_seq__gte=-1), name="run_last_seq_valid"),
            models.CheckConstraint(
                condition=Q(goal_speedup__isnull=True) | Q(goal_speedup__gt=0), name="run_goal_speedup_positive"
            ),
            # A fork has its step and what it starts from; a run that is not one has neither.
            models.CheckConstraint(
                condition=Q(fork_seq__isnull=True, fork__isnull=True) | Q(fork_seq__isnull=False, fork__isnull=False),
                name="run_fork_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.task.name}, {self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def origin_key(self) -> str:
        """The original run this run records: its `origin` when imported, else itself. Every import of one run
        (and of an export of an import) has the same key (runs.services.trace_import.trace_origin)."""
        return self.origin or f"run:{self.pk}:{self.created_at.isoformat()}"

    @property
    def host_offline(self) -> bool:
        """Held by a host that is not connected now: the run moves again when its host reconnects (it resumes
        from its trace), or ends when an operator stops it."""
        return self.worker is not None and self.status in HELD_STATUSES and not self.worker.is_connected

    @property
    def goal(self) -> tuple[str, float]:
        """(baseline, speedup) this run must reach: its own when set, else its task's. Every page, chart and figure
        of a run reads its goal here, never from the task."""
        return (self.goal_baseline or self.task.goal_baseline, self.goal_speedup or self.task.goal_speedup)

    def best_text(self, baseline: str | None = None) -> str:
        """The best verified speedup over `baseline` (the goal's when None) as every list writes it: with the
        interval of the evaluation that set it, "no difference (…)" where that holds 1.0, "(noise unknown)" where
        that evaluation's noise was (`best_noise_unknown`, as the run header writes it), and over best_library
        what it is the best of where that evaluation missed some of the task's libraries; "—" while there is none."""
        baseline = baseline or self.goal[0]
        value = self.best_speedup if baseline == self.goal[0] else (self.best_speedups or {}).get(baseline)
        interval = figures.interval_of((self.best_intervals or {}).get(baseline))
        text = figures.speedup_text(value, interval)
        unknown = value is not None and baseline in (self.best_noise_unknown or [])
        text = figures.noise_unknown_text(text, unknown)
        if value is not None and baseline == figures.BEST_LIBRARY and self.best_library_scope:
            text = f"{text} · {self.best_library_scope}"
        return text

    def best_texts(self) -> list[tuple[str, str]]:
        """(baseline, `best_text` over it) for every baseline a best was measured over, by name."""
        return [(name, self.best_text(name)) for name in sorted(self.best_speedups or {})]

    @property
    def cost_text(self) -> str:
        """The run's cost as every page writes it: "$0.0123", or, where a model's price was unknown, the floor it
        is, "at least $0.0123 (a model's price is unknown)" (docs/protocol.md 1.1: a cost is never invented)."""
        return cost_words(self.cost_usd, self.cost_incomplete)


# What follows a run's cost whose total is a floor: a usage event of the run had no price (Run.cost_incomplete).
COST_INCOMPLETE_NOTE = "a model's price is unknown"


def cost_words(cost_usd, incomplete: bool) -> str:
    """A cost in dollars to 4 places, as the pages write it; "at least …" with its note where it is incomplete
    (a sum over runs is incomplete where any of them is)."""
    # Rounded half up, as the templates' floatformat:4 wrote it before.
    amount = f"${Decimal(str(cost_usd)).quantize(Decimal('0.0001'), ROUND_HALF_UP)}"
    return f"at least {amount} ({COST_INCOMPLETE_NOTE})" if incomplete else amount


# The event kinds. A Step's kind is checked by the event parser (runs/event_parser.py), not by the database: a new
# kind needs no migration.
StepKind = models.TextChoices(  # type: ignore[call-overload]  # django-stubs: no overload for the functional API's (value, label) pairs
    "StepKind", [(value.upper(), (value, label)) for value, label in EVENT_KINDS.items()]
)


class Step(models.Model):
    """One event of a run. (run, seq) is unique: an event delivered twice is stored once."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32, help_text="One of agentloop.protocol.KINDS")
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(help_text="When the event happened, by the sender's clock")
    stored_at = models.DateTimeField(auto_now_add=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=10, decimal_places=6, default=0)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="step_run_seq_unique"),
        ]
        indexes = [models.Index(fields=["run", "kind", "seq"])]

    def __str__(self) -> str:
        return f"run {self.run_id} #{self.seq} {self.kind}"


class RefusedEvent(models.Model):
    """An event of a run that the server refused for good (too large, a different event under a used seq, a
    `succeeded` no stored evaluation confirms): the worker drops it, so the run's page says what is missing and
    why. Kept once per (run, seq); a repeat updates it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="refused_events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=32, blank=True)
    size_bytes = models.PositiveIntegerField(default=0, help_text="Size of the event as sent, in bytes")
    error = models.TextField()
    refused_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="refused_event_run_seq_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} #{self.seq} refused"


class QuestionSource(models.TextChoices):
    HUMAN = "human", "Written by a human"
    BANK = "bank", "Picked from the bank by rule"
    SELF = "self", "Picked from the bank by the agent"


class QuestionStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "Approved"
    EDITED = "edited", "Edited and approved"
    VETOED = "vetoed", "Vetoed"
    ANSWERED = "answered", "Answered"


class Question(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="questions")
    step = models.ForeignKey(
        Step,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="questions",
        help_text="The step at which it was asked",
    )
    source = models.CharField(max_length=10, choices=QuestionSource.choices)
    decision_point = models.CharField(max_length=20, choices=DecisionPoint.choices, blank=True)
    text = models.TextField()
    original_text = models.TextField(blank=True, help_text="The proposed text, when a reviewer edited it")
    # A reviewer wrote their own question in its place (the review queue's "write your own"): stored as an edit,
    # but what the agent was asked is the reviewer's, so the bank's figures credit the reviewer, not the entry.
    replaced = models.BooleanField(default=False, help_text="A reviewer replaced the proposal with their own question")
    category = models.CharField(max_length=20, choices=QuestionCategory.choices, blank=True)
    reason = models.TextField(blank=True, help_text="Why the agent picked it")
    status = models.CharField(max_length=10, choices=QuestionStatus.choices, default=QuestionStatus.PROPOSED)
    bank_entry = models.ForeignKey(
        "questionbank.BankQuestion", null=True, blank=True, on_delete=models.PROTECT, related_name="asked"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="questions_decided"
    )
    # An imported run's decision is its trace's claim: the reviewer the trace names is kept as its text, never
    # looked up as an account of this site (runs/services/step_effects.py).
    trace_reviewer = models.CharField(
        max_length=150, blank=True, help_text="The reviewer an imported trace names: the trace's word, no account here"
    )
    # Likewise who an imported trace says proposed it (its `by`): a "human" there is no person of this site, so
    # the bank's figures credit that question to no one (runs/selectors_bank.py, `_question_credit`).
    trace_proposed_by = models.CharField(
        max_length=20, blank=True, help_text="Who an imported trace says proposed it (its `by`): the trace's word"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    unheard_decision = models.TextField(
        blank=True,
        help_text="A reviewer's decision that was stored but the agent did not act on: it had asked the proposal "
        "by timeout first, or reports another decision (runs.services.questions.question_decision_reported)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(source__in=QuestionSource.values), name="question_source_valid"),
            models.CheckConstraint(condition=Q(status__in=QuestionStatus.values), name="question_status_valid"),
            # A decided question records when it was decided.
            models.CheckConstraint(
                condition=Q(status=QuestionStatus.PROPOSED) | Q(decided_at__isnull=False),
                name="question_decided_has_time",
            ),
        ]

    def __str__(self) -> str:
        return f"question {self.pk} ({self.status}): {self.text[:60]}"


class Kernel(models.Model):
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="kernels")
    source = models.TextField()
    sha256 = models.CharField(max_length=64, db_index=True)
    filename = models.CharField(max_length=200, blank=True)
    language = models.CharField(max_length=20, default="cuda", help_text="cuda or cpp")
    target_arch = models.CharField(max_length=20, blank=True, help_text="e.g. sm_90a; blank for CPU kernels")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="kernels")
    step = models.ForeignKey(Step, null=True, blank=True, on_delete=models.SET_NULL, related_name="kernels")
    released = models.BooleanField(default=False)
    release_name = models.SlugField(max_length=120, null=True, blank=True)
    # A released kernel's development: its lab's trace imported as a run (release.toml `development_trace`).
    development_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="developed_kernels"
    )
    # What its maintainers learned of the release's figures since they were measured (release.toml `note`): the
    # measured verdict stays as the harness wrote it; the kernel page shows this beside it.
    release_note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="kernel_sha256_hex"),
            models.CheckConstraint(
                condition=Q(released=False) | (Q(release_name__isnull=False) & ~Q(release_name="")),
                name="kernel_released_has_name",
            ),
            models.UniqueConstraint(
                fields=["release_name"], condition=Q(released=True), name="kernel_release_name_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.release_name or f"kernel {self.sha256[:12]}"

    @property
    def imported(self) -> bool:
        """Copied from an imported trace: its source is a claim of that trace, never measured here by itself."""
        return self.run_id is not None and bool(self.run.imported_from)


# A verdict's statuses are the harness's (gpu_harness.result.STATUSES); these labels are the dashboard's.
_EVALUATION_LABELS = {"compiled": "Compiled (not run)"}
EvaluationStatus = models.TextChoices(  # type: ignore[call-overload]  # django-stubs: no overload for the functional API's (value, label) pairs
    "EvaluationStatus",
    [(value.upper(), (value, _EVALUATION_LABELS.get(value, value.capitalize()))) for value in STATUSES],
)


def standing_verdict(
    status: str, scenarios_correct: dict, geomean: dict | None, libraries: list | None = None, notes: dict | None = None
) -> dict:
    """The part of a verdict that says what its figures may be called and what they are (status, the geomean,
    each scenario's id and correctness: all that gpu_harness.figures' `standing`, `all_correct` and
    `verified_speedup` read; the libraries it timed and its n/a notes: what `libraries_not_timed` reads), from an
    evaluation's columns and its verdict's geomean, libraries and notes, read without the rest."""
    scenarios = [{"id": sid, "correct": correct} for sid, correct in (scenarios_correct or {}).items()]
    return {
        "status": status,
        "geomean": geomean or {},
        "scenarios": scenarios,
        "libraries": libraries or [],
        "baseline_notes": notes or {},
    }


class Evaluation(models.Model):
    """One harness verdict of a kernel, stored once: `verdict` is `EvalResult.to_dict()` as the harness wrote it,
    under its own field names, less what is stored elsewhere or malformed (runs.services.kernels.stored_verdict:
    the kernel's source is its Kernel row's). Every figure of it comes from gpu_harness.figures on that dict.

    The columns beside it are what queries filter or order on: the kernel, run and step it belongs to, its
    status (a copy of the verdict's, written with it in `evaluation_record` and held valid by a constraint) and
    when it was stored. No table per scenario: no query selects, orders or counts evaluations by a scenario, and
    a page that shows a verdict's scenarios shows them all (the evidence view, the compare grid, the export)."""

    kernel = models.ForeignKey(Kernel, on_delete=models.CASCADE, related_name="evaluations")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    step = models.ForeignKey(Step, null=True, blank=True, on_delete=models.SET_NULL, related_name="evaluations")
    status = models.CharField(max_length=10, choices=EvaluationStatus.choices)
    verdict = models.JSONField(default=dict, blank=True, help_text="The harness's verdict (EvalResult.to_dict())")
    # An index of the verdict, not a second record of it: scenario id -> correct, written with it. The lists that
    # rank many evaluations (the kernel list, a task's best) read this and the verdict's geomean alone
    # (`standing_verdict`), never the whole verdict, whose per-scenario timings are ~150 KB for attention's grid.
    scenarios_correct = models.JSONField(default=dict, blank=True, help_text="Scenario id -> correct (an index)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=EvaluationStatus.values), name="evaluation_status_valid"),
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of {self.kernel} ({self.status})"

    def standing_verdict(self, geomean: dict, libraries: list | None = None, notes: dict | None = None) -> dict:
        """`standing_verdict` of this row, its verdict's geomean, libraries and notes read with it (annotations:
        `geomean=F("verdict__geomean")`, and `verdict__libraries`, `verdict__baseline_notes` the same way)."""
        return standing_verdict(self.status, self.scenarios_correct, geomean, libraries, notes)

    @property
    def imported(self) -> bool:
        """A trace's claim no harness here measured: its run was made from a trace, or it has no run and its
        kernel is not a released one."""
        if self.run_id is not None:
            return bool(self.run.imported_from)
        return not self.kernel.released

    @property
    def recorded(self) -> bool:
        """A released kernel's results file, loaded with the repository (`load_released_kernels`): a claim no
        harness here measured either, shown as the release's record (docs/architecture.md "Imported runs")."""
        return self.run_id is None and self.kernel.released

    @property
    def standing(self) -> str:
        """What its figures may be called (gpu_harness.figures.standing): "verified" (measured here on its task's
        full set), "quick" (measured here on fewer scenarios), "imported" (a claim from a trace) or "recorded"
        (a released kernel's results file)."""
        task = self.kernel.task
        full_ids = list(task.scenario_ids or []) if task is not None else []
        return figures.standing(self.verdict, full_ids, imported=self.imported, recorded=self.recorded)

    def speedup_over(self, baseline: str) -> float | None:
        return figures.speedup_over(self.verdict, baseline)


class DirectiveAction(models.TextChoices):
    """What the server may tell a worker about one of its runs (docs/protocol.md, 2.3)."""

    PAUSE = "pause", "Pause"
    RESUME = "resume", "Resume"
    STOP = "stop", "Stop"
    HUMAN_MESSAGE = "human_message", "Human message"
    QUESTION_DECISION = "question_decision", "Question decision"


class Directive(models.Model):
    """An instruction for the worker running a run: the outbox of the worker socket.

    Kept until the worker acknowledges its id, and sent again after every `hello`; the worker acts on an id once.
    It goes to whichever worker holds the run when it is sent, so a run that moves keeps its pending directives.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="directives")
    action = models.CharField(max_length=20, choices=DirectiveAction.choices)
    fields = models.JSONField(default=dict, blank=True, help_text="The action's extra fields, sent as they are")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    sent_count = models.PositiveIntegerField(default=0)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    acked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["acked_at", "run"])]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=DirectiveAction.values), name="directive_action_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.wire_id} {self.action} for run {self.run_id}"

    @property
    def wire_id(self) -> str:
        return f"d-{self.pk}"
