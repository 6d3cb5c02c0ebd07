from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"

    def ready(self) -> None:
        from consoles.extensions import register_demo_loader, register_home_cards

        from .demo import load_demo
        from .home import home_cards

        register_home_cards(home_cards, order=20)
        register_demo_loader(load_demo, order=20)
