from django.apps import AppConfig


class SamplingConfig(AppConfig):
    name = "sampling"

    def ready(self) -> None:
        from consoles.extensions import register_demo_loader, register_home_cards

        from .demo import load_demo, load_demo_after_cases, sampling_home_cards

        register_home_cards(sampling_home_cards, order=300)
        # The verifier's plan samples its own demo cases, before the adjudication
        # app's loader (400) adds more; the chat assistant's plan samples that
        # loader's cases, so it comes after it.
        register_demo_loader(load_demo, order=300)
        register_demo_loader(load_demo_after_cases, order=450)
