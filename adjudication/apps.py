from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"

    def ready(self) -> None:
        from consoles.extensions import register_demo_loader, register_home_cards

        from .demo import load_demo
        from .home import home_cards

        register_home_cards(home_cards, order=20)
        # After sampling (300): its demo plan is made on its own verifier cases first.
        register_demo_loader(load_demo, order=400)
