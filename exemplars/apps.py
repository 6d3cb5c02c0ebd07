from django.apps import AppConfig


class ExemplarsConfig(AppConfig):
    name = "exemplars"
    verbose_name = "Exemplar bank"

    def ready(self) -> None:
        from consoles.extensions import register_demo_loader, register_home_cards
        from feedback.services import register_erasure_hook

        from . import checks  # noqa: F401 - registers the embedder check
        from .demo import load_demo_bank
        from .services import bank_erase_flags
        from .views import home_cards

        # Erasure and retention remove a subject's exemplars in their own transaction.
        register_erasure_hook(bank_erase_flags)
        register_home_cards(home_cards, order=15)
        # After the feedback demo (10): the bank is built from its approved flags.
        register_demo_loader(load_demo_bank, order=15)
