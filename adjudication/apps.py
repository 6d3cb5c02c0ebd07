from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "adjudication"

    def ready(self) -> None:
        from consoles.extensions import (
            register_demo_loader,
            register_home_cards,
            register_vocabulary_use,
        )

        from .demo import load_demo
        from .home import home_cards

        register_home_cards(home_cards, order=20)
        # After sampling (300): its demo plan is made on its own verifier cases first.
        register_demo_loader(load_demo, order=400)
        register_vocabulary_use(_vocabulary_use)


def _vocabulary_use(application, field: str, keys: set[str]) -> dict[str, str]:
    """Case labels given, or promoted to gold, keep their key."""
    if field != "case_labels":
        return {}
    from .models import CaseLabel, GoldLabelRevision

    return {
        key: "case labels" for key in keys
        if CaseLabel.objects.filter(application=application, label=key).exists()
        or GoldLabelRevision.objects.filter(application=application, label=key).exists()
    }
