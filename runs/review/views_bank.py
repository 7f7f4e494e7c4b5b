"""The question bank with its effectiveness figures (from runs.selectors_bank), and reviewers' additions."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from questionbank.selectors import large_gain_ratio
from questionbank.services import BankQuestionInvalid, bank_question_add
from runs import selectors_bank as bank_selectors
from runs.forms import BankQuestionForm
from runs.permissions import REVIEWER, role_required


@login_required
@require_safe
def bank(request):
    return _bank_page(request)


def _bank_page(request, form=None):
    """The bank's page, with `form` (a refused addition, answered 400 with its errors) or an empty one."""
    # Which kinds of run to leave out of the figures (?exclude=demo&exclude=imported); names not known are ignored.
    exclude = frozenset(request.GET.getlist("exclude")) & set(bank_selectors.EXCLUDABLE)
    by_question = bank_selectors.effectiveness_by_question(exclude=exclude)
    by_category = bank_selectors.effectiveness_by_category(exclude=exclude)
    asked = [q for q in by_question if q["asked"]]
    # each bar with its interval (an error bar; none where the noise is unknown) and the table's words for it
    chart = {
        "categories": [c["category"] for c in by_category],
        "category_gain": [c["mean_gain"] for c in by_category],
        "category_interval": [[c["mean_gain_low"], c["mean_gain_high"]] for c in by_category],
        "category_gain_text": [c["mean_gain_text"] for c in by_category],
        "category_asked": [c["asked"] for c in by_category],
        "questions": [q["key"] for q in asked],
        "question_gain": [q["mean_gain"] for q in asked],
        "question_interval": [[q["mean_gain_low"], q["mean_gain_high"]] for q in asked],
        "question_gain_text": [q["mean_gain_text"] for q in asked],
        "question_text": [q["text"] for q in asked],
    }
    return render(
        request,
        "runs/bank.html",
        {
            "questions": by_question,
            "categories": by_category,
            "chart": chart,
            "excludable": [(name, label, name in exclude) for name, label in bank_selectors.EXCLUDABLE.items()],
            "form": form or BankQuestionForm(),
            "large_gain_ratio": large_gain_ratio(),
        },
        status=400 if form is not None and form.errors else 200,
    )


@role_required(REVIEWER)
@require_POST
def bank_add(request):
    form = BankQuestionForm(request.POST)
    if form.is_valid():
        try:
            entry = bank_question_add(
                form.cleaned_data["text"],
                form.cleaned_data["category"],
                form.cleaned_data["triggers"],
                added_by=request.user,
                targets=form.cleaned_data["targets"],
            )
        except BankQuestionInvalid as refused:
            form.add_error(None, str(refused))
        else:
            messages.success(request, f"Added {entry.key} to the bank.")
            return redirect("bank")
    return _bank_page(request, form=form)
