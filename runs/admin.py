from django.contrib import admin

from runs.models import Evaluation, Kernel, Question, Run, ScenarioResult, Step, Task, WorkerHost


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["name", "target", "goal_baseline", "goal_speedup", "created_at"]
    search_fields = ["name", "title"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["pk", "task", "status", "model", "worker", "best_speedup", "step_count", "created_at"]
    list_filter = ["status", "task", "review_mode"]
    raw_id_fields = ["started_by", "worker"]
    readonly_fields = ["last_seq", "step_count", "tokens_in", "tokens_out", "cost_usd", "created_at", "updated_at"]


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["run", "seq", "kind", "created_at", "tokens_in", "tokens_out"]
    list_filter = ["kind"]
    raw_id_fields = ["run"]
    # A run has thousands of steps: never render a select of them.
    list_select_related = ["run"]


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["pk", "run", "source", "category", "status", "decision_point", "created_at"]
    list_filter = ["status", "source", "category", "decision_point"]
    raw_id_fields = ["run", "step", "reviewer", "bank_entry"]
    search_fields = ["text"]


@admin.register(Kernel)
class KernelAdmin(admin.ModelAdmin):
    list_display = ["pk", "release_name", "released", "task", "language", "target_arch", "sha256", "created_at"]
    list_filter = ["released", "language", "task"]
    raw_id_fields = ["parent", "run", "step"]
    search_fields = ["sha256", "release_name", "filename"]


class ScenarioResultInline(admin.TabularInline):
    model = ScenarioResult
    extra = 0


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["pk", "kernel", "status", "gpu_name", "scenario_set", "created_at"]
    list_filter = ["status", "gpu_name"]
    raw_id_fields = ["kernel", "run", "step"]
    inlines = [ScenarioResultInline]


@admin.register(ScenarioResult)
class ScenarioResultAdmin(admin.ModelAdmin):
    list_display = ["evaluation", "scenario_id", "correct", "error", "time_ms", "tflops"]
    list_filter = ["correct"]
    raw_id_fields = ["evaluation"]


@admin.register(WorkerHost)
class WorkerHostAdmin(admin.ModelAdmin):
    list_display = ["name", "token_prefix", "revoked_at", "is_connected", "last_seen", "disconnected_at", "created_at"]
    # The hash is not secret but is useless to a person; tokens are made with `manage.py worker_token`.
    exclude = ["token_hash"]
    readonly_fields = ["token_prefix", "connection", "last_seen", "disconnected_at", "created_at"]

    def has_add_permission(self, request):
        return False
