from django.apps import AppConfig


class TeachingConfig(AppConfig):
    name = "teaching"
