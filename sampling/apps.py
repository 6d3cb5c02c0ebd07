from django.apps import AppConfig


class SamplingConfig(AppConfig):
    name = "sampling"

    def ready(self) -> None:
        from consoles.extensions import register_demo_loader, register_home_cards

        from .demo import load_demo, sampling_home_cards

        register_home_cards(sampling_home_cards, order=300)
        # After the adjudication app's loader, whose cases the demo plan samples.
        register_demo_loader(load_demo, order=300)
