"""Adjudication: case import, evidence records for sampling, claim next, case page.

    python -m bench adjudication                       # SQLite scratch file, 5,000 cases
    BENCH_ADJ_ROWS=50000 python -m bench adjudication  # scale up
    BENCH_ADJ_DB=postgres python -m bench adjudication # scratch PostgreSQL database bench_adjudication

Figures (each with a reference measured in the same run):
1. import: cases/s through case_import (validation, digest, evidence, event row);
   reference: bare ORM inserts of the same rows.
2. case_evidence_records over the whole application (what sampling calls);
   reference: one raw values_list over the same evidence rows.
3. claim next: p95 per claim by 200 different curators with ROWS open entries;
   reference: p95 of a plain indexed read of the first open entry.
4. case page: p95 server time of GET /a/<slug>/cases/<pk>/ (Django test client);
   reference: /healthz.
5. the cases screen at BENCH_ADJ_LIST_ROWS cases (default 200,000, bulk-inserted):
   first page, two status filters, the strategy filter, a common and a rare search
   term, the 101st page by cursor;
   reference: /healthz.
"""

import os
import subprocess
import time

ROWS = int(os.environ.get("BENCH_ADJ_ROWS", "5000"))
CLAIMS = int(os.environ.get("BENCH_ADJ_CLAIMS", "200"))
LIST_ROWS = int(os.environ.get("BENCH_ADJ_LIST_ROWS", "200000"))
LIST_SAMPLES = int(os.environ.get("BENCH_ADJ_LIST_SAMPLES", "15"))
PG_URL = os.environ.get("BENCH_ADJ_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_adjudication")


def _payload(n: int) -> dict:
    event = f"evt-{n}"
    return {
        "case_id": f"bench-{n:07d}",
        "claim": {"subject": f"subject {n % 50}", "text": f"The agent did thing {n}."},
        "local_verdict": "corroborated",
        "mined_by": ["sensor_disagreement"] if n % 2 else ["high_uncertainty"],
        "replay_manifest": {
            "schema_version": 1, "fusion_policy_name": "baseline", "fusion_policy_version": 2,
            "decision_policy_name": "d", "decision_policy_version": 1,
            "adapter_provider": "claude", "adapter_runtime_version": "1.0", "disabled_sensors": [],
        },
        "evidence": [
            {"evidence_id": "e1", "relation": "supports", "trust_class": "agent_adjacent", "source_event_id": event},
            {"evidence_id": "e2", "relation": "supports", "trust_class": "agent_adjacent", "source_event_id": event},
            {"evidence_id": "e3", "relation": "contradicts", "trust_class": "host_observed", "source_event_id": event},
            {"evidence_id": "e4", "relation": "supports", "trust_class": "model_internal"},
        ],
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    from bench.common import p95, setup_django

    if os.environ.get("BENCH_ADJ_DB") == "postgres":
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", "bench_adjudication"], capture_output=True, check=False)
        subprocess.run(
            ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "bench_adjudication", "-q", "-c",
             "DROP SCHEMA public CASCADE; CREATE SCHEMA public;"],
            capture_output=True, check=False,
        )
        setup_django(PG_URL)
    else:
        setup_django()

    from django.db import connection, transaction
    from django.test import Client

    from adjudication.models import Case, Evidence, QueueEntry
    from adjudication.schemas import CaseIn
    from adjudication.selectors import case_evidence_records
    from adjudication.services import case_import, queue_claim_next
    from consoles.models import Application, Membership, Role
    from consoles.tests.factories import UserFactory

    print(f"database: {connection.vendor}, cases: {ROWS}")
    app = Application.objects.create(slug="bench", name="Bench")
    ref_app = Application.objects.create(slug="bench-ref", name="Reference")
    payloads = [CaseIn.model_validate(_payload(n)) for n in range(ROWS)]

    # 1. import
    started = time.perf_counter()
    with transaction.atomic():
        for data in payloads:
            case_import(application=app, data=data, actor=None)
    took = time.perf_counter() - started
    started = time.perf_counter()
    with transaction.atomic():
        for data in payloads:
            case = Case.objects.create(
                application=ref_app, case_id=data.case_id, claim_subject=data.claim.subject,
                claim_text=data.claim.text, local_verdict=data.local_verdict, mined_by=data.mined_by,
                replay_manifest=data.replay_manifest.model_dump(), digest="0" * 64,
            )
            Evidence.objects.bulk_create(
                [Evidence(case=case, position=i, evidence_id=e.evidence_id, relation=e.relation,
                          trust_class=e.trust_class, source_event_id=e.source_event_id or "")
                 for i, e in enumerate(data.evidence)]
            )
    ref = time.perf_counter() - started
    print(f"import: {ROWS / took:.0f} cases/s (reference bare ORM {ROWS / ref:.0f} cases/s, ratio {ref / took:.2f})")

    # 2. evidence records for sampling
    started = time.perf_counter()
    records = case_evidence_records(application=app)
    took = time.perf_counter() - started
    started = time.perf_counter()
    rows = list(Evidence.objects.filter(case__application=app).values_list("case_id", "evidence_id", "relation", "trust_class"))
    ref = time.perf_counter() - started
    assert len(records) == ROWS and len(rows) == ROWS * 4
    print(f"case_evidence_records: {_ms(took)} for {ROWS} cases (reference raw rows {_ms(ref)}, ratio {took / ref:.2f}x)")

    # 3. claim next
    cases = list(Case.objects.filter(application=app).values_list("pk", flat=True))
    QueueEntry.objects.bulk_create([QueueEntry(application=app, case_id=pk, selection_reason="bench") for pk in cases])
    users = [UserFactory(username=f"bench-curator-{i}") for i in range(CLAIMS)]
    Membership.objects.bulk_create([Membership(user=u, application=app, role=Role.CURATOR) for u in users])
    samples = []
    for user in users:
        started = time.perf_counter()
        entry = queue_claim_next(application=app, user=user)
        samples.append(time.perf_counter() - started)
        assert entry is not None
    ref_samples = []
    for _ in range(CLAIMS):
        started = time.perf_counter()
        QueueEntry.objects.filter(application=app, state="open", claimed_by__isnull=True).order_by("created_at", "id").first()
        ref_samples.append(time.perf_counter() - started)
    claimed = QueueEntry.objects.filter(application=app, claimed_by__isnull=False).values("claimed_by").distinct().count()
    print(f"claim next: p95 {_ms(p95(samples))} with {ROWS} open entries, {claimed} distinct claims "
          f"(reference indexed read p95 {_ms(p95(ref_samples))}, ratio {p95(samples) / p95(ref_samples):.1f}x)")

    # 4. case page
    client = Client()
    client.force_login(users[0])
    pk = cases[len(cases) // 2]
    url = f"/a/{app.slug}/cases/{pk}/"
    assert client.get(url).status_code == 200
    page, health = [], []
    for _ in range(30):
        started = time.perf_counter()
        client.get(url)
        page.append(time.perf_counter() - started)
        started = time.perf_counter()
        client.get("/healthz")
        health.append(time.perf_counter() - started)
    print(f"case page: p95 {_ms(p95(page))} (reference /healthz p95 {_ms(p95(health))}, ratio {p95(page) / p95(health):.1f}x)")
    list_url = f"/a/{app.slug}/cases/"
    listing = []
    for _ in range(20):
        started = time.perf_counter()
        client.get(list_url)
        listing.append(time.perf_counter() - started)
    print(f"case list (first page of {ROWS}): p95 {_ms(p95(listing))}")
    _case_list_at_scale(client, users[0], p95(health))


def _case_list_at_scale(client, user, health_p95: float) -> None:
    """The cases screen over LIST_ROWS cases (bulk-inserted: the screen's cost, not the
    import's): pages by cursor, no COUNT, so the first page and a page 100 pages down
    should cost about the same; a status few cases have reads past the rest."""
    import re

    from django.db import connection, transaction

    from adjudication.models import Case
    from bench.common import p95
    from consoles.models import Application, Membership, Role

    app = Application.objects.create(slug="bench-list", name="Bench list")
    Membership.objects.create(user=user, application=app, role=Role.CURATOR)
    started = time.perf_counter()
    with transaction.atomic():
        for start in range(0, LIST_ROWS, 5000):
            Case.objects.bulk_create([
                Case(application=app, case_id=f"list-{n:07d}", claim_subject=f"subject {n % 50}",
                     claim_text=f"The agent did thing {n}.", local_verdict="corroborated", digest="0" * 64,
                     mined_by=["sensor_disagreement"] if n % 2 else ["high_uncertainty"])
                for n in range(start, min(LIST_ROWS, start + 5000))])
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    fill = time.perf_counter() - started
    base = f"/a/{app.slug}/cases/"
    deep = ""
    for _ in range(100):
        html = client.get(base + deep).content.decode()
        deep = re.search(r'href="(\?[^"]+)" rel="next"', html).group(1).replace("&amp;", "&")
    pages = {"first page": "", "status: unlabelled": "?status=unlabelled",
             "status: gold (none has one)": "?status=gold", "strategy filter": "?strategy=sensor_disagreement",
             "search: 1 case in 50": "?q=subject+7", "search: 1 case of all": "?q=thing+123456.",
             "101st page, by cursor": deep}
    print(f"case list at {LIST_ROWS:,} cases (filled in {fill:.0f} s), "
          f"p95 of {LIST_SAMPLES} (reference /healthz p95 {_ms(health_p95)}):")
    for label, query in pages.items():
        samples = []
        for _ in range(LIST_SAMPLES + 2):
            started = time.perf_counter()
            response = client.get(base + query)
            samples.append(time.perf_counter() - started)
            assert response.status_code == 200, (query, response.status_code)
        took = p95(samples[2:])  # warm-up
        print(f"  {label:<28} {_ms(took):>9}   x{took / health_p95:6.1f}")
