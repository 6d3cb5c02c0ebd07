from django.apps import AppConfig


class OverviewConfig(AppConfig):
    """A read-only dashboard over the other apps (through their selectors).

    Nothing imports this app; it owns no model and writes nothing.
    """

    name = "overview"
