from django.apps import AppConfig


class QuestionbankConfig(AppConfig):
    name = "questionbank"
    verbose_name = "Question bank"
