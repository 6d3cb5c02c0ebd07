from django.apps import AppConfig


class ConsolesConfig(AppConfig):
    name = "consoles"
    verbose_name = "Tenants and access"
