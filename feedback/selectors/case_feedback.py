"""Reads of operators' and agents' feedback on cases."""


from django.db.models import QuerySet

from consoles.models import Application

from ..models import (
    CaseFeedback,
    Disposition,
)


def case_refs_with_disagreement(*, application: Application) -> set[str]:
    """Case ids someone (operator or agent) disagreed on: a sampling signal only."""
    return set(
        CaseFeedback.objects.filter(application=application, disposition=Disposition.DISAGREES)
        .values_list("case_ref", flat=True)
        .distinct()
    )


def case_feedback_list(*, application: Application, case_ref: str) -> QuerySet[CaseFeedback]:
    return (
        CaseFeedback.objects.filter(application=application, case_ref=case_ref)
        .select_related("author_user", "author_token")
        .order_by("-created_at", "-id")
    )
