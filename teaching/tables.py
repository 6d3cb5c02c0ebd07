"""Tables of the teaching app (django-tables2). Ordering is fixed to what the
indexes serve (newest first), so columns are not sortable."""

import django_tables2 as tables
from django.urls import reverse
from django.utils.html import format_html

from consoles.timestamps import on_screen

from .models import Proposal


class ProposalTable(tables.Table):
    proposal = tables.Column(accessor="proposal_id", verbose_name="Proposal", orderable=False)
    chain = tables.Column(accessor="subject", verbose_name="Chain", orderable=False)
    state = tables.Column(orderable=False)
    replay = tables.Column(accessor="replay_equivalent", verbose_name="Replay gate", orderable=False)
    candidate = tables.Column(accessor="candidate__candidate_id", verbose_name="Candidate", orderable=False)
    created_at = tables.Column(verbose_name="Proposed", orderable=False)

    class Meta:
        model = Proposal
        fields = ()
        sequence = ("proposal", "chain", "state", "replay", "candidate", "created_at")
        attrs = {"class": "proposals", "data-testid": "proposal-table"}
        row_attrs = {"data-proposal": lambda record: record.proposal_id}
        empty_text = "No proposals in this state."

    def __init__(self, *args, app_slug: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.app_slug = app_slug

    def render_created_at(self, value) -> str:
        return on_screen(value)

    def render_proposal(self, record: Proposal) -> str:
        url = reverse("teaching:proposal", args=[self.app_slug, record.proposal_id])
        return format_html('<a href="{}"><code>{}</code></a>', url, record.proposal_id[:12])

    def render_chain(self, record: Proposal) -> str:
        return format_html(
            "{} <em>{}</em> {} <strong>{}</strong> <span class=\"badge\">{}</span>",
            record.subject, record.intent, record.connective, record.object, record.get_polarity_display(),
        )

    def render_state(self, record: Proposal) -> str:
        return format_html('<span class="badge {}">{}</span>', record.state, record.get_state_display())

    def render_replay(self, record: Proposal) -> str:
        if record.replay_equivalent:
            return format_html('<span class="badge accepted">{}</span>', "equivalent")
        return format_html('<span class="badge rejected">{}</span>', "regressed")
