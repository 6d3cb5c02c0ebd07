from django.apps import AppConfig
from django.db.models.signals import post_migrate

# Home-card counts stop here: the card says "N+" rather than counting a huge table.
COUNT_CAP = 10_000
# The overview's default range (overview.forms.DEFAULT_DAYS), and a day to spare.
DEMO_HISTORY_DAYS = 31


class FeedbackConfig(AppConfig):
    name = "feedback"

    def ready(self) -> None:
        from consoles.extensions import (
            register_demo_loader,
            register_home_cards,
            register_vocabulary_use,
        )

        from .demo import load_demo_flags

        register_home_cards(_home_cards, order=10)
        register_demo_loader(load_demo_flags, order=10)
        # Last of all: the overview's ended days, summed once the demo's history is written.
        register_demo_loader(_sum_demo_history, order=10_000)
        register_vocabulary_use(_vocabulary_use)
        # SQLite drops a table's triggers when a migration rebuilds the table:
        # the search index's are put back after every migrate (feedback.search).
        post_migrate.connect(_search_index_in_step, sender=self)


def _sum_demo_history(*, application, users) -> None:
    """The demo's history is dated in the past, which forgets the stored days:
    sum them now (as `sum_history` does from cron), so the first overview after
    `make run` reads them instead of summing four weeks while the lead waits."""
    from .history import history_days_sum

    history_days_sum(application=application, days=DEMO_HISTORY_DAYS)


def _search_index_in_step(using: str = "default", **kwargs) -> None:
    from .search import ensure_sqlite_index

    ensure_sqlite_index(using=using)


# The flag columns that hold each of an application's vocabularies.
_VOCABULARY_COLUMNS = {"axes": ("axis", "suggested_axis"), "problems": ("problem",), "capture_labels": ("capture_label",)}


def _vocabulary_use(application, field: str, keys: set[str]) -> dict[str, str]:
    from django.db.models import Q

    from .models import Flag

    flags = Flag.objects.filter(application=application)
    columns = _VOCABULARY_COLUMNS.get(field, ())
    return {
        key: "flags" for key in keys
        if columns and flags.filter(Q(*[(column, key) for column in columns], _connector=Q.OR)).exists()
    }


def _home_cards(application) -> list:
    from django.urls import reverse

    from consoles.extensions import HomeCard

    from .selectors import pending_flag_count, unlabelled_capture_count

    queue = reverse("feedback:queue", args=[application.slug])
    pending = pending_flag_count(application=application, cap=COUNT_CAP)
    cards = [
        HomeCard(
            title="Pending flags",
            count=pending,
            caption=("at least " if pending >= COUNT_CAP else "") + "flags from users and operators to triage",
            url=f"{queue}?status=pending",
        )
    ]
    if application.capture_enabled:
        captures = unlabelled_capture_count(application=application, cap=COUNT_CAP)
        cards.append(
            HomeCard(
                title="Unlabelled captures",
                count=captures,
                caption="low-confidence or refused answers to label",
                url=f"{queue}?status=pending&author_kind=agent",
            )
        )
    return cards
