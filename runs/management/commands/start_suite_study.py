"""Start a study over a suite from the command line: the suite study form's command (docs/fork.md, "Suite
studies"). One run per arm on every imported problem of the suite, all queued or none."""

from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from runs.model_options import model_options
from runs.models import ReviewMode, Suite
from runs.services import ServiceError, suite_study_start
from runs.services.studies import SETTINGS
from runs.task_pages.selectors_suites import suite_by_name_or_id


def _cost(word: str | None) -> Decimal | None:
    if word is None:
        return None
    try:
        return Decimal(word)
    except InvalidOperation:
        raise CommandError(f"--budget-cost-usd is a number, not {word!r}") from None


class Command(BaseCommand):
    help = "Queue a study over a suite: one run per value of --setting (an arm) on each of its imported problems."

    def add_arguments(self, parser):
        parser.add_argument("suite", help="the suite's name (its folder's) or id")
        parser.add_argument("--setting", required=True, choices=SETTINGS, help="the one setting the arms differ in")
        parser.add_argument("--values", required=True, help="its values, comma-separated, one arm each (2 to 8)")
        parser.add_argument("--model", default="", help="the runs' model (a study of models takes its values)")
        parser.add_argument("--review-mode", default=ReviewMode.AUTO, choices=ReviewMode.values)
        parser.add_argument("--review-timeout-s", type=int)
        for name in ("steps", "tokens", "wall-s", "evaluations"):
            parser.add_argument(f"--budget-{name}", type=int)
        parser.add_argument("--budget-cost-usd")

    def handle(self, *args, **options):
        try:
            suite = suite_by_name_or_id(options["suite"])
        except Suite.DoesNotExist as missing:
            raise CommandError(str(missing)) from None
        model = options["model"] or (options["values"].split(",")[0].strip() if options["setting"] == "model" else "")
        try:
            suite_study = suite_study_start(
                suite=suite,
                setting=options["setting"],
                values=options["values"].split(","),
                model=model,
                review_mode=options["review_mode"],
                review_timeout_s=options["review_timeout_s"],
                budget_steps=options["budget_steps"],
                budget_tokens=options["budget_tokens"],
                budget_cost_usd=_cost(options["budget_cost_usd"]),
                budget_wall_s=options["budget_wall_s"],
                budget_evaluations=options["budget_evaluations"],
                recordings={o.spec: o.recording for o in model_options() if o.recording},
            )
        except ServiceError as refused:
            raise CommandError(str(refused)) from None
        self.stdout.write(
            f"suite study {suite_study.pk} of {suite.name}: {', '.join(map(str, suite_study.values))} queued; "
            f"its scoreboard: {reverse('suite_scoreboard', args=[suite_study.pk])}"
        )
