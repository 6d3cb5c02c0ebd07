"""Migration 0009: a receipt still waiting when the receipts went becomes its
flag with its `created` event; one already in the queue is not written twice."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# consoles at 0004: the publishable keys (0005) add a column the 0008 state does not know.
BEFORE = [("feedback", "0008_flag_receipts"), ("consoles", "0004_webhooks")]
AFTER = [("feedback", "0009_drop_flag_receipts")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_waiting_receipts_become_flags_with_their_created_event():
    old = _migrate(BEFORE)
    try:
        Application = old.get_model("consoles", "Application")
        ApiToken = old.get_model("consoles", "ApiToken")
        Flag = old.get_model("feedback", "Flag")
        FlagReceipt = old.get_model("feedback", "FlagReceipt")
        app = Application.objects.create(slug="mig", name="Mig")
        token = ApiToken.objects.create(kind="application", name="ingest", application=app, prefix="cc_app_x",
                                        digest="0" * 64)
        at = datetime(2026, 3, 1, 12, tzinfo=UTC)
        common = {"application": app, "author_token": token, "created_at": at, "region": "answer",
                  "problem": "fabricated", "suggested_axis": "hallucination", "note": "n", "prompt": "p",
                  "answer": "a", "detector_scores": {"hallucination": 0.2}, "session_id": "s"}
        FlagReceipt.objects.create(public_id="fb_00000000000000a1", message_id="waiting", **common)
        FlagReceipt.objects.create(public_id="fb_00000000000000a2", message_id="moved", moved=True, **common)
        Flag.objects.create(public_id="fb_00000000000000a2", application=app, author_token=token, region="answer",
                            problem="fabricated", message_id="moved", author_kind="end_user", created_at=at,
                            updated_at=at)
        FlagReceipt.objects.create(public_id="bad", message_id="refused", **common)  # the flag table refuses it
    finally:
        new = _migrate(AFTER)
    Flag, FlagEvent = new.get_model("feedback", "Flag"), new.get_model("feedback", "FlagEvent")
    moved = Flag.objects.get(public_id="fb_00000000000000a1")
    assert (moved.status, moved.axis, moved.author_kind, moved.note, moved.created_at, moved.updated_at) == (
        "pending", "hallucination", "end_user", "n", at, at)
    assert moved.author_token_id == token.pk and moved.detector_scores == {"hallucination": 0.2}
    event = FlagEvent.objects.get(flag_id=moved.pk)
    assert (event.action, event.to_status, event.actor_kind, event.actor_token_id, event.created_at) == (
        "created", "pending", "token", token.pk, at)
    assert Flag.objects.filter(message_id="moved").count() == 1
    assert not Flag.objects.filter(message_id="refused").exists()
    assert "feedback_flagreceipt" not in connection.introspection.table_names()
    _migrate(_leaves())


def _leaves():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()
