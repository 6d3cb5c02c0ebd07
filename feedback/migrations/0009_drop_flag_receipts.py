"""Flags are written whole again (with their `created` event, before the answer):
any receipt still waiting becomes its flag and event here, then the receipts'
table goes.

Set-based, through the historical models, in batches: a receipt already in the
queue (moved, or its flag written meanwhile) is skipped; the application's
stored history days are forgotten, since a receipt moved now may be dated on
one of them. A receipt the flag table's constraints refuse (the fault that
ended this design: it made every read of its application fail) cannot become
a flag; it is named on the migration's output and dropped with the table.
"""

import sys

from django.db import migrations
from django.db.models import F, Q

BATCH = 1000
PUBLIC_ID_REGEX = r"^fb_[0-9a-f]{16}$"
CARRIED = ("region", "problem", "suggested_axis", "prompt", "context", "answer", "detector_scores", "note",
           "message_id", "session_id", "end_user_ref")


def receipts_into_flags(apps, schema_editor):
    FlagReceipt = apps.get_model("feedback", "FlagReceipt")
    Flag = apps.get_model("feedback", "Flag")
    FlagEvent = apps.get_model("feedback", "FlagEvent")
    HistoryEpoch = apps.get_model("feedback", "HistoryEpoch")
    HistoryDay = apps.get_model("feedback", "HistoryDay")
    waiting = FlagReceipt.objects.filter(moved=False)
    valid = Q(public_id__regex=PUBLIC_ID_REGEX, region__in=["prompt", "answer"]) & ~Q(problem="") & ~Q(message_id="")
    refused = list(waiting.exclude(valid).values_list("public_id", flat=True))
    if refused:
        sys.stdout.write(f"\n  {len(refused)} flag receipt(s) the flag table refuses were not moved: "
                         f"{', '.join(refused[:50])}\n")
    applications: set[int] = set()
    last = ""
    while True:
        batch = list(waiting.filter(valid, public_id__gt=last).order_by("public_id")[:BATCH])
        if not batch:
            break
        last = batch[-1].public_id
        taken = set(Flag.objects.filter(public_id__in=[r.public_id for r in batch]).values_list("public_id", flat=True))
        # The same message written as a flag by another path meanwhile.
        written = set(Flag.objects.filter(
            application_id__in={r.application_id for r in batch}, message_id__in={r.message_id for r in batch},
            capture_reason="",
        ).values_list("application_id", "message_id", "region"))
        taken |= {r.public_id for r in batch if (r.application_id, r.message_id, r.region) in written}
        flags = [
            Flag(public_id=r.public_id, application_id=r.application_id, author_token_id=r.author_token_id,
                 axis=r.suggested_axis, status="pending", author_kind="end_user", created_at=r.created_at,
                 updated_at=r.created_at, **{name: getattr(r, name) for name in CARRIED})
            for r in sorted(batch, key=lambda r: (r.created_at, r.public_id)) if r.public_id not in taken
        ]
        Flag.objects.bulk_create(flags)
        FlagEvent.objects.bulk_create([
            FlagEvent(application_id=f.application_id, flag_id=f.pk, action="created", from_status="",
                      to_status="pending", actor_kind="token", actor_token_id=f.author_token_id, changes={},
                      created_at=f.created_at)
            for f in flags
        ])
        applications.update(f.application_id for f in flags)
    for application_id in applications:
        # As feedback.history.history_days_forget: readers ignore days of an older epoch.
        if not HistoryEpoch.objects.filter(application_id=application_id).update(epoch=F("epoch") + 1):
            HistoryEpoch.objects.create(application_id=application_id, epoch=1)
        HistoryDay.objects.filter(application_id=application_id).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("feedback", "0008_flag_receipts"),
    ]

    operations = [
        migrations.RunPython(receipts_into_flags, migrations.RunPython.noop),
        migrations.DeleteModel(name="FlagReceipt"),
    ]
