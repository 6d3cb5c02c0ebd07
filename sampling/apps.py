from django.apps import AppConfig


class SamplingConfig(AppConfig):
    name = "sampling"
