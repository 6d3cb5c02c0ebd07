"""Read-only admin: teaching history changes only through the services (and their
events); nothing here can add, edit or delete a proposal, decision or corpus entry."""

from django.contrib import admin
from django.http import HttpRequest

from consoles.admin_scope import TenantScopedAdmin

from .models import (
    Candidate,
    CorpusEntry,
    CorpusSupersession,
    EvalCase,
    Proposal,
    ProposalDecision,
    ProposalEvent,
)


class ReadOnlyAdmin(TenantScopedAdmin):
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Candidate)
class CandidateAdmin(ReadOnlyAdmin):
    list_display = ["candidate_id", "application", "polarity", "claim_domain", "boundary_clean", "actor_kind", "created_at"]
    list_filter = ["application", "polarity"]
    list_select_related = ["application"]
    search_fields = ["candidate_id"]


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyAdmin):
    list_display = ["proposal_id", "application", "state", "replay_equivalent", "subject", "object", "created_at"]
    list_filter = ["application", "state", "replay_equivalent"]
    list_select_related = ["application"]
    search_fields = ["proposal_id"]


@admin.register(ProposalEvent)
class ProposalEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "application", "proposal", "kind", "from_state", "to_state", "actor_kind", "created_at"]
    list_filter = ["application", "kind"]
    list_select_related = ["application", "proposal"]


@admin.register(ProposalDecision)
class ProposalDecisionAdmin(ReadOnlyAdmin):
    list_display = ["proposal", "application", "decision", "operator", "decided_at"]
    list_filter = ["application", "decision"]
    list_select_related = ["application", "proposal", "operator"]


@admin.register(CorpusEntry)
class CorpusEntryAdmin(ReadOnlyAdmin):
    list_display = ["id", "application", "subject", "intent", "connective", "object", "polarity", "source", "review_date"]
    list_filter = ["application", "source"]
    search_fields = ["subject", "object"]
    list_select_related = ["application"]


@admin.register(CorpusSupersession)
class CorpusSupersessionAdmin(ReadOnlyAdmin):
    list_display = ["entry", "superseded_by", "operator", "created_at"]
    list_select_related = ["entry", "superseded_by", "operator"]


@admin.register(EvalCase)
class EvalCaseAdmin(ReadOnlyAdmin):
    list_display = ["case_id", "application", "split", "subject", "intent", "expected_object", "expected_polarity"]
    list_filter = ["application", "split"]
    search_fields = ["case_id"]
    list_select_related = ["application"]
