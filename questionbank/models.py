"""The question bank as stored rows.

The source of truth is `questionbank/bank.toml`, reviewed like code; a loader command mirrors it here so that
asked questions can link to their entry. Entries removed from the file are deactivated, never deleted, so that
history keeps its links.
"""

from django.conf import settings
from django.db import models


class QuestionCategory(models.TextChoices):
    LAYER = "layer", "Move to another layer"
    LIMIT = "limit", "Reject a claimed limit"
    HYPOTHESIS = "hypothesis", "Test a hypothesis"
    PROCESS = "process", "Process"
    INFORMATION = "information", "Supplies information (kept for comparison)"


class DecisionPoint(models.TextChoices):
    START = "start", "Start"
    STOPPED_SHORT = "stopped-short", "Stopped short of the goal"
    CLAIMED_LIMIT = "claimed-limit", "Claimed a limit"
    PLATEAU = "plateau", "Plateau"
    FAILURE_STREAK = "failure-streak", "Streak of failures"
    REGRESSION = "regression", "Regression"


class BankQuestion(models.Model):
    key = models.SlugField(max_length=80, unique=True, help_text="Stable id from bank.toml")
    text = models.TextField()
    category = models.CharField(max_length=20, choices=QuestionCategory.choices)
    triggers = models.JSONField(default=list, blank=True, help_text="Decision points this question suits")
    targets = models.JSONField(
        default=list, blank=True, help_text='Kinds of task target it is for ("cpu", "gpu"); empty: every target'
    )
    active = models.BooleanField(default=True)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(category__in=QuestionCategory.values), name="bankquestion_category_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.text[:60]}"
