"""Template helpers: roles, the pending-question count in the navigation bar, speedups, highlighted source."""

import json

from django import template
from django.utils.safestring import mark_safe

from gpu_harness import figures
from gpu_harness.figures import format_speedup
from runs import demo, permissions
from runs.selectors import (
    USAGE_UNKNOWN,
    evaluation_library_scope,
    evaluation_speedup_text,
    questions_pending_count,
    run_usage_unknown,
)

register = template.Library()


@register.simple_tag(takes_context=True)
def user_can(context, role: str) -> bool:
    return permissions.has_role(context["request"].user, role)


@register.simple_tag(takes_context=True)
def user_roles(context) -> list[str]:
    """The roles the signed-in user holds, lowest first (the 403 page says them beside the one that was needed)."""
    held = permissions.roles_of(context["request"].user)
    return [role for role in permissions.ROLE_ORDER if role in held]


@register.filter
def goal_note(run) -> str:
    """A run's own goal beside the task's, where they differ (runs.demo.goal_note): "demo goal 0.500× over naive
    (the task's is 2.000×)"; "" where they do not."""
    return demo.goal_note(run)


@register.filter
def usage_cost_text(run) -> str:
    """A run's cost as the runs list writes it: "unknown: the trace records none" for an imported run whose trace
    recorded no usage (run_usage_unknown), as its run page and the compare page say, never a "$0.0000" that reads
    as a measured zero; else its cost_text."""
    return USAGE_UNKNOWN if run_usage_unknown(run) else run.cost_text


@register.simple_tag
def pending_questions() -> int:
    return questions_pending_count()


@register.filter
def speedup(value) -> str:
    return format_speedup(value, digits=".3f", times="×", missing="—")


@register.filter
def duration(value) -> str:
    """A timedelta as the run page's clock shows it ("1h 02m 03s"); "—" for none (a run not started yet)."""
    if value is None:
        return "—"
    seconds = max(0, int(value.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {seconds:02d}s" if hours else f"{minutes}m {seconds:02d}s"


@register.filter
def get_item(mapping, key):
    return (mapping or {}).get(key)


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, default=str)


@register.filter
def highlight(source: str, language: str = "cuda") -> str:
    from pygments import highlight as pygmentize
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CppLexer, CudaLexer

    lexer = CudaLexer() if language == "cuda" else CppLexer()
    return mark_safe(
        pygmentize(
            source or "", lexer, HtmlFormatter(linenos="table", cssclass="source", anchorlinenos=True, lineanchors="L")
        )
    )


@register.filter
def speedup_measured(evaluation, baseline: str) -> str:
    """A stored evaluation's speedup over `baseline` with its noise, as the run page writes it
    (`runs.selectors.evaluation_speedup_text`)."""
    return evaluation_speedup_text(evaluation, baseline)


@register.filter
def speedup_interval(evaluation, baseline: str) -> str:
    """A stored evaluation's speedup over `baseline` with its interval, "no difference (…)" where that holds 1.0
    (gpu_harness.figures.verdict_speedup_text); where a line shows several baselines, `host_busy` says once that
    the host was busy; a best library that missed some of the task's libraries says which it timed, and a baseline
    whose time may hold a host wait says on how many scenarios."""
    text = figures.verdict_speedup_text(evaluation.verdict, baseline)
    scope = evaluation_library_scope(evaluation, baseline)
    return figures.with_notes(text, scope, figures.host_wait_words(evaluation.verdict, baseline))


@register.filter
def geomean_baselines(evaluation) -> list[str]:
    """The baselines a stored evaluation has a well-formed geometric mean over (gpu_harness.figures.geomean_entries;
    an imported verdict's malformed geomean has none)."""
    return list(figures.geomean_entries(evaluation.verdict))


@register.filter
def host_busy(evaluation) -> str:
    """Why the evaluation's timings were taken on a busy host (gpu_harness.figures.host_busy); "" when not."""
    return figures.host_busy(evaluation.verdict) or ""


@register.filter
def speedup_over(evaluation, baseline: str):
    """A stored evaluation's speedup over `baseline`; pages pass the run's own goal baseline (`Run.goal`)."""
    return evaluation.speedup_over(baseline)


@register.filter
def scenario_set_words(evaluation) -> str:
    """Which scenarios a stored evaluation ran, by what it ran, not by its verdict's word alone: "full (N
    scenarios)" where it ran every scenario of its task, else its verdict's set (or "a subset") with "N of M
    scenarios"; its verdict's word, or "—", where its kernel has no task. A release's results name no set."""
    verdict = evaluation.verdict
    named = verdict.get("scenario_set") if isinstance(verdict.get("scenario_set"), str) else ""
    task = evaluation.kernel.task
    full_ids = list(task.scenario_ids or []) if task is not None else []
    if not full_ids:
        return named or "—"
    if figures.covers(verdict, full_ids):
        return f"full ({len(full_ids)} scenarios)"
    ran = figures.scenarios_ran(verdict, full_ids)
    return f"{named if named and named != 'full' else 'a subset'} ({ran} of {len(full_ids)} scenarios)"


@register.filter
def device(evaluation) -> str:
    """The machine a stored evaluation ran on (gpu_harness.figures.device_of), "—" where its verdict names none."""
    return figures.device_of(evaluation.verdict) or "—"


@register.filter
def standing_label(evaluation, baseline: str) -> str:
    """ " (quick)", " (imported)" or " (recorded)" after an evaluation's speed-up over `baseline` that is not
    verified (a full evaluation measured here, gpu_harness.figures.standing); "" for a verified one."""
    from runs.selectors import standing_suffix

    task = evaluation.kernel.task
    full_ids = list(task.scenario_ids or []) if task is not None else []
    return standing_suffix(evaluation.verdict, baseline, full_ids, evaluation.imported, evaluation.recorded)
