from django.apps import AppConfig


class ConsolesConfig(AppConfig):
    name = "consoles"
    verbose_name = "Tenants and access"

    def ready(self) -> None:
        from .extensions import register_demo_loader
        from .webhook_demo import load_demo_webhooks

        register_demo_loader(load_demo_webhooks, order=200)
