from typing import TYPE_CHECKING

from django.contrib import admin

from questionbank.models import BankQuestion

if TYPE_CHECKING:  # generic in django-stubs only: ModelAdmin[...] fails at run time
    BankQuestionAdminBase = admin.ModelAdmin[BankQuestion]
else:
    BankQuestionAdminBase = admin.ModelAdmin


@admin.register(BankQuestion)
class BankQuestionAdmin(BankQuestionAdminBase):
    list_display = ["key", "category", "active", "text"]
    list_filter = ["category", "active"]
    search_fields = ["key", "text"]
