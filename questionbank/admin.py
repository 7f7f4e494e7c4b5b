from django.contrib import admin

from questionbank.models import BankQuestion


@admin.register(BankQuestion)
class BankQuestionAdmin(admin.ModelAdmin):
    list_display = ["key", "category", "active", "text"]
    list_filter = ["category", "active"]
    search_fields = ["key", "text"]
