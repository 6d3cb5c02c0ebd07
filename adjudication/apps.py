from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"
