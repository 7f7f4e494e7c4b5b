"""The admin: accounts and roles, tasks, worker hosts; every record the harness and the agent write is shown, never
edited. Suites, their problems and suite studies are shown the same way: a suite is what its manifest
(suite.json) says, synced by `sync_tasks`, and a suite study is queued whole by its service. A run, its steps, questions, kernels and evaluations come only from a worker's events
(or a trace import, or the released kernels' loader), through the services that keep their invariants: an admin
form that could add or change one would forge a verdict, or a decision, no harness or reviewer made."""

from django.contrib import admin

from runs.models import (
    Evaluation,
    Kernel,
    Question,
    Run,
    Step,
    Suite,
    SuiteProblem,
    SuiteStudy,
    Task,
    WorkerHost,
)


class RecordAdmin(admin.ModelAdmin):
    """A record the harness or the agent wrote: viewable, with no add, change or delete offered."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class RecordInline(admin.TabularInline):
    """The inline of a written record's parts: shown, never added, changed or deleted."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["name", "target", "goal_baseline", "goal_speedup", "created_at"]
    search_fields = ["name", "title"]


@admin.register(Run)
class RunAdmin(RecordAdmin):
    list_display = ["pk", "task", "status", "model", "worker", "best_speedup", "step_count", "created_at"]
    list_filter = ["status", "task", "review_mode"]
    raw_id_fields = ["started_by", "worker"]


@admin.register(Step)
class StepAdmin(RecordAdmin):
    list_display = ["run", "seq", "kind", "created_at", "tokens_in", "tokens_out"]
    list_filter = ["kind"]
    raw_id_fields = ["run"]
    # A run has thousands of steps: never render a select of them.
    list_select_related = ["run"]


@admin.register(Question)
class QuestionAdmin(RecordAdmin):
    list_display = ["pk", "run", "source", "category", "status", "decision_point", "created_at"]
    list_filter = ["status", "source", "category", "decision_point"]
    raw_id_fields = ["run", "step", "reviewer", "bank_entry"]
    search_fields = ["text"]


@admin.register(Kernel)
class KernelAdmin(RecordAdmin):
    list_display = ["pk", "release_name", "released", "task", "language", "target_arch", "sha256", "created_at"]
    list_filter = ["released", "language", "task"]
    raw_id_fields = ["parent", "run", "step"]
    search_fields = ["sha256", "release_name", "filename"]


@admin.register(Evaluation)
class EvaluationAdmin(RecordAdmin):
    list_display = ["pk", "kernel", "status", "device_name", "scenario_set", "created_at"]
    list_filter = ["status"]
    raw_id_fields = ["kernel", "run", "step"]

    @admin.display(description="device")
    def device_name(self, evaluation: Evaluation) -> str:
        return evaluation.verdict.get("device_name") or ""

    @admin.display(description="scenarios")
    def scenario_set(self, evaluation: Evaluation) -> str:
        return evaluation.verdict.get("scenario_set") or ""


@admin.register(WorkerHost)
class WorkerHostAdmin(admin.ModelAdmin):
    list_display = ["name", "token_prefix", "revoked_at", "is_connected", "last_seen", "disconnected_at", "created_at"]
    # The hash is not secret but is useless to a person; tokens are made with `manage.py worker_token`.
    exclude = ["token_hash"]
    readonly_fields = ["token_prefix", "connection", "last_seen", "disconnected_at", "created_at"]

    def has_add_permission(self, request):
        return False


@admin.register(Suite)
class SuiteAdmin(RecordAdmin):
    list_display = ["name", "format", "source", "synced_at"]


@admin.register(SuiteProblem)
class SuiteProblemAdmin(RecordAdmin):
    list_display = ["suite", "position", "file", "outcome", "task"]
    list_filter = ["outcome"]


@admin.register(SuiteStudy)
class SuiteStudyAdmin(RecordAdmin):
    list_display = ["pk", "suite", "setting", "created_at"]
