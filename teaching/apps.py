from django.apps import AppConfig


class TeachingConfig(AppConfig):
    name = "teaching"

    def ready(self) -> None:
        from consoles.extensions import register_demo_loader, register_home_cards

        from .demo import load_demo
        from .views import home_cards

        register_home_cards(home_cards, order=40)
        register_demo_loader(load_demo, order=40)
