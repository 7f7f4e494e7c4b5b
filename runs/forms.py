"""Forms of the dashboard. They check shapes; the services check what the data allows."""

from django import forms
from django.conf import settings

from questionbank.bank import TARGET_KINDS, TEXT_MAX_LENGTH
from questionbank.models import DecisionPoint, QuestionCategory
from runs.model_options import default_model, model_options, model_refusal, recording_of
from runs.models import BUDGET_COST_USD_MAX, RUN_SETTING_MAX, Kernel, ReviewMode, Task
from runs.services.questions import PERSON_TEXT_MAX, shows_something
from runs.services.workers import GPU_NAME_MAX_CHARS, GPUS_MAX_COUNT, gpu_names_from_text, gpu_names_refusal

# PERSON_TEXT_MAX (runs.services.questions, imported above) holds every text a person writes to the agent.


class StartRunForm(forms.Form):
    task = forms.ModelChoiceField(queryset=Task.objects.all(), to_field_name="name")
    starting_kernel = forms.ModelChoiceField(
        queryset=Kernel.objects.none(),
        required=False,
        empty_label="the task's own starting kernel",
        help_text="or a kernel stored here (released or from a run) of the same task",
    )
    model = forms.CharField(
        max_length=120,
        widget=forms.TextInput(attrs={"list": "model-options", "autocomplete": "off"}),
        help_text="one of the models below that can run here: an Anthropic model id, openai:MODEL, or a recording listed",
    )
    review_mode = forms.ChoiceField(choices=ReviewMode.choices, initial=ReviewMode.REVIEW)
    # Each number has its ceiling (runs.models.RUN_SETTING_MAX, the same for a study and start_suite_study), so a
    # value too large is a form error on either database rather than an overflow at the insert.
    review_timeout_s = forms.IntegerField(
        min_value=1, max_value=RUN_SETTING_MAX["review_timeout_s"], required=False, label="Review timeout (s)"
    )
    budget_steps = forms.IntegerField(
        min_value=1, max_value=RUN_SETTING_MAX["budget_steps"], required=False, label="Steps"
    )
    budget_tokens = forms.IntegerField(
        min_value=1, max_value=RUN_SETTING_MAX["budget_tokens"], required=False, label="Tokens"
    )
    budget_cost_usd = forms.DecimalField(
        min_value=0, max_value=BUDGET_COST_USD_MAX, max_digits=10, decimal_places=4, required=False, label="Cost (USD)"
    )
    budget_wall_s = forms.IntegerField(
        min_value=1, max_value=RUN_SETTING_MAX["budget_wall_s"], required=False, label="Wall time (s)"
    )
    budget_evaluations = forms.IntegerField(
        min_value=1, max_value=RUN_SETTING_MAX["budget_evaluations"], required=False, label="Evaluations"
    )

    # The settings every run of this form gets as they are (a run, each run of a study or of a suite study).
    RUN_SETTINGS = (
        "review_mode",
        "review_timeout_s",
        "budget_steps",
        "budget_tokens",
        "budget_cost_usd",
        "budget_wall_s",
        "budget_evaluations",
    )

    def __init__(self, *args, environ=None, **kwargs):
        super().__init__(*args, **kwargs)
        # What can run here, and what each needs (the page lists them; the field suggests them).
        self.environ = environ
        self.model_options = model_options(environ)
        self.fields["model"].initial = default_model(self.model_options)
        self.fields["starting_kernel"].queryset = Kernel.objects.select_related("task").order_by(
            "-released", "-created_at"
        )
        self.fields["starting_kernel"].label_from_instance = lambda k: (
            f"{k.task.name if k.task else '?'} · {k.release_name or k.sha256[:12]}"
            + (f" (run {k.run_id})" if k.run_id else "")
        )

    def clean(self):
        data = super().clean()
        kernel, task = data.get("starting_kernel"), data.get("task")
        if kernel is not None and task is not None and kernel.task_id not in (None, task.pk):
            self.add_error("starting_kernel", f"this kernel belongs to task {kernel.task}, not {task}")
        self.check_models(data)
        recording = recording_of(data.get("model"), self.model_options)
        if recording and task is not None and recording.get("task") not in (None, task.name):
            self.add_error("model", f"this recording is of task {recording['task']}, not {task}: pick that task")
        if data.get("review_mode") == ReviewMode.REVIEW_TIMEOUT and not data.get("review_timeout_s"):
            self.add_error("review_timeout_s", "a timeout is needed for this review mode")
        return data

    def run_settings(self) -> dict:
        """The cleaned review mode and budgets (RUN_SETTINGS), as the start services take them."""
        return {name: self.cleaned_data[name] for name in self.RUN_SETTINGS}

    def recordings(self) -> dict:
        """Each recording the model field offers, by the spec a user types (a study's `recordings`)."""
        return {option.spec: option.recording for option in self.model_options if option.recording}

    def check_models(self, data) -> None:
        """Refuse a model that cannot run here, with the reason the page's list gives (not queued to fail)."""
        if data.get("model") and (refusal := model_refusal(data["model"], self.model_options, self.environ)):
            self.add_error("model", refusal)


class MessageForm(forms.Form):
    text = forms.CharField(max_length=PERSON_TEXT_MAX, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_text(self):
        # The field strips whitespace only: a text of invisible characters alone is as empty to the agent.
        if not shows_something(self.cleaned_data["text"]):
            raise forms.ValidationError("the message is empty")
        return self.cleaned_data["text"]


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[(d, d) for d in ("approve", "edit", "veto", "replace")])
    text = forms.CharField(max_length=PERSON_TEXT_MAX, required=False)

    def clean(self):
        data = super().clean()
        # A text the field refused (too long) is not missing: its own error says why, and saying "needs the
        # question's text" too would tell a reviewer who wrote one to write one.
        if "text" in self.errors:
            return data
        if data.get("decision") in ("edit", "replace") and not shows_something(data.get("text")):
            self.add_error("text", "an edit or a replacement needs the question's text")
        return data


def _sizes(size: int, limit: int) -> tuple[str, str]:
    """Two sizes in bytes and in MiB, the MiB with as many decimals as it takes for them to differ (and for the
    smaller not to read 0)."""
    places = next(
        (
            p
            for p in range(1, 9)
            if f"{size / 2**20:.{p}f}" != f"{limit / 2**20:.{p}f}" and round(min(size, limit) / 2**20, p) > 0
        ),
        9,
    )
    size_text, limit_text = (f"{n:,} bytes ({n / 2**20:.{places}f} MiB)" for n in (size, limit))
    return size_text, limit_text


def _size(size: int) -> str:
    if size >= 2**20:
        return f"{size / 2**20:.1f} MiB"
    return f"{size / 2**10:.1f} KiB" if size >= 2**10 else f"{size} bytes"


class TraceImportForm(forms.Form):
    trace = forms.FileField(help_text="JSONL: an export from here, an agent-loop trace, or a harness --trace file")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["trace"].help_text += f"; at most {_size(settings.KSEEK_TRACE_UPLOAD_MAX_BYTES)}"

    def clean_trace(self):
        # The upload lies in a temporary file by now (FILE_UPLOAD_MAX_MEMORY_SIZE): its size is known unread.
        upload = self.cleaned_data["trace"]
        limit = settings.KSEEK_TRACE_UPLOAD_MAX_BYTES
        if upload.size > limit:
            size, most = _sizes(upload.size, limit)
            raise forms.ValidationError(
                f"the file is {size}; the import takes at most {most} (KSEEK_TRACE_UPLOAD_MAX_BYTES={limit}): split "
                "the trace, or ask the administrator to raise the limit",
                code="too_large",
            )
        return upload


class WorkerHostForm(forms.Form):
    name = forms.SlugField(max_length=80)
    # Room for the most a hello may announce (64 names of 100 characters, with ", " between them); the names are
    # then held to the hello's limits one by one (a 500-character field refused lists a hello takes).
    gpus = forms.CharField(
        max_length=GPUS_MAX_COUNT * (GPU_NAME_MAX_CHARS + 2),
        required=False,
        help_text=f"comma-separated GPU names: at most {GPUS_MAX_COUNT}, each at most {GPU_NAME_MAX_CHARS} characters",
    )

    def clean_gpus(self) -> list[str]:
        names = gpu_names_from_text(self.cleaned_data["gpus"])
        if refusal := gpu_names_refusal(names):
            raise forms.ValidationError(refusal)
        return names


class BankQuestionForm(forms.Form):
    # The bank's own limit (a bank.toml entry's too), so the page's box, this form and the bank say one number.
    text = forms.CharField(
        max_length=TEXT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=f"at most {TEXT_MAX_LENGTH} characters, as every question in the bank",
    )
    category = forms.ChoiceField(choices=QuestionCategory.choices)
    triggers = forms.MultipleChoiceField(choices=DecisionPoint.choices, widget=forms.CheckboxSelectMultiple)
    # The bank file's `targets` words (questionbank.bank.TARGET_KINDS); none ticked, like both, is every target.
    targets = forms.MultipleChoiceField(
        choices=[(kind, kind) for kind in TARGET_KINDS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Only for targets",
        help_text='none ticked: every target ("gpu" is any CUDA target)',
    )


class ForkForm(forms.Form):
    """A fork of a run at one of its steps (docs/fork.md). `decision` only at a question step."""

    model = forms.CharField(
        max_length=120,
        widget=forms.TextInput(attrs={"list": "model-options", "autocomplete": "off"}),
        help_text="the model the fork continues with: the parent's, another Anthropic id, openai:MODEL or a recording listed",
    )
    decision = forms.ChoiceField(
        required=False,
        choices=[
            ("veto", "Veto it: ask nothing here"),
            ("bank", "Ask another bank question instead"),
            ("write", "Ask my own question instead"),
        ],
        widget=forms.RadioSelect,
    )
    bank_key = forms.ChoiceField(
        required=False,
        label="Bank question",
        # Said in the bank's terms: the choices are the active questions for the task's target, less the parent's.
        error_messages={
            "invalid_choice": "%(value)s is not an active bank question offered for this fork (the question the "
            "parent was asked is not offered)"
        },
    )
    text = forms.CharField(
        required=False, max_length=PERSON_TEXT_MAX, widget=forms.Textarea(attrs={"rows": 3}), label="Your question"
    )

    def __init__(self, *args, bank=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["bank_key"].choices = [("", "—")] + [(e.key, f"[{e.category}] {e.text}") for e in bank]


class StudyForm(StartRunForm):
    """A study: the start form's settings for every run, and the one setting that differs, with its values."""

    setting = forms.ChoiceField(
        choices=[
            ("questions", "Questions (on, off)"),
            ("review_mode", "Review mode (auto, review, review_timeout)"),
            ("model", "Model"),
            ("budget_steps", "Step budget"),
            ("budget_evaluations", "Evaluation budget"),
            ("budget_tokens", "Token budget"),
            ("budget_wall_s", "Wall-time budget (s)"),
        ],
        label="The setting that differs",
    )
    values = forms.CharField(
        max_length=2000,
        label="Its values",
        help_text="comma-separated, one run each (2 to 8): e.g. on, off · or claude-sonnet-4-6, openai:qwen3-coder",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["starting_kernel"]  # a study's runs start from their recording's kernel, or their task's
        self.fields["review_mode"].initial = ReviewMode.AUTO

    def check_models(self, data) -> None:
        """A study of models checks each of its values (the model field then holds none of its runs' models)."""
        if data.get("setting") != "model":
            return super().check_models(data)
        for word in dict.fromkeys(w.strip() for w in (data.get("values") or "").split(",") if w.strip()):
            if refusal := model_refusal(word, self.model_options, self.environ):
                self.add_error("values", refusal)


class SuiteStudyForm(StudyForm):
    """A study over a suite: the study form without its task (every imported problem of the suite is one)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        del self.fields["task"]
        self.fields["setting"].initial = "questions"
        self.fields["values"].help_text = (
            "comma-separated, one arm each (2 to 8), one run per arm on every problem: e.g. on, off · or "
            "claude-sonnet-4-6, openai:qwen3-coder"
        )
