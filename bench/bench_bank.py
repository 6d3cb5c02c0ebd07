"""Exemplar bank: build time for 100,000 exemplars and the score endpoint's p95 in-process.

Figures: the build (read the approved set, hash it, embed, persist), the load after a
restart (read the stored bank, no embedding), and p95 of `exemplars.services.score`
with the bank enabled (the per-score staleness check in the database, embedding the
query, matching the requested axes of the region, adjusting) over >= 1,000 queries,
half of them exact exemplar texts (matches) and half new texts. References measured
in the same run: the same call with the bank disabled (validation and passthrough),
and bare numpy mat-vecs of the same shapes (one region's five axes; the whole bank).

    python -m bench bank                                   # SQLite, 100,000 exemplars
    BANK_BENCH_EXEMPLARS=20000 python -m bench bank
    BANK_BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_bank python -m bench bank
    BANK_BENCH_PART=external python -m bench bank            # only the detector-owned-vector part

The second part does the same for an `external` profile: 100,000 exemplars whose
384-dimensional vectors the "detector" uploaded through the vectors service
(1,000 a call, the API's limit), scored with the query's vector (half of them an
exemplar's own vector, half random directions).
"""

import os
import random
import shutil
import time

from bench.common import p95, setup_django

EXEMPLARS = int(os.environ.get("BANK_BENCH_EXEMPLARS", "100000"))
QUERIES = max(1000, int(os.environ.get("BANK_BENCH_QUERIES", "1000")))
TWIN_SHARE = 0.05  # one flag in twenty carries a contrastive benign twin
TARGET_MS = 5.0
AXES = ["jailbreak", "prompt_injection", "hallucination", "toxicity", "privacy_leak"]

_VOCABULARY = (
    "ignore previous instructions system prompt reveal password store alarm order refund policy warranty "
    "shipping address phone email customer account delivery opening hours sunday lyon berlin paris game "
    "rules roleplay pretend secret admin token base64 encode translate summarise page comment hidden "
    "citation prize author novel recipe dose medicine advice insult rude idiot complaint late parcel "
    "blender headphones return opened defective ticket agent mobile number street city postcode bank card"
)
WORDS = _VOCABULARY.split()


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 22))) + f" #{rng.randint(0, 10**9)}"


def _load_flags(app, n_flags: int, rng: random.Random) -> list[tuple[str, str]]:
    from django.utils import timezone

    from feedback.models import Flag

    now = timezone.now()
    batch, samples = [], []
    for i in range(n_flags):
        region = "prompt" if i % 2 else "answer"
        text = _text(rng)
        twin = _text(rng) if rng.random() < TWIN_SHARE else ""
        batch.append(Flag(
            public_id=f"fb_{i:016x}", application=app, region=region, problem="fabricated",
            suggested_axis=AXES[i % len(AXES)], axis=AXES[i % len(AXES)], status="approved",
            verdict="false_negative" if rng.random() < 0.8 else "false_positive",
            prompt=text if region == "prompt" else "", answer=text if region == "answer" else "",
            twin_prompt=twin if region == "prompt" else "", twin_answer=twin if region == "answer" else "",
            weight=0.9 if twin else None, message_id=f"m{i}", author_kind="end_user", created_at=now,
            updated_at=now,
        ))
        if i % 97 == 0:
            samples.append((region, text))
        if len(batch) == 5000:
            Flag.objects.bulk_create(batch)
            batch = []
    Flag.objects.bulk_create(batch)
    return samples


def main() -> None:
    part = os.environ.get("BANK_BENCH_PART", "both")
    setup_django(os.environ.get("BANK_BENCH_DATABASE_URL"))
    if part in ("both", "console"):
        console_main()
    if part in ("both", "external"):
        external_main()
    if not os.environ.get("BANK_BENCH_DATABASE_URL"):
        from django.db import connection

        connection.close()  # the scratch SQLite file holds ~200 MB at 100,000 exemplars
        shutil.rmtree(os.path.dirname(os.environ["SQLITE_PATH"]), ignore_errors=True)


EXTERNAL_DIM = int(os.environ.get("BANK_BENCH_DIM", "384"))


def external_main() -> None:
    import numpy as np
    from django.db import connection

    from consoles.models import Application
    from exemplars import services
    from exemplars.models import BankSettings, DetectorProfile
    from exemplars.selectors import exemplar_page

    rng = random.Random(11)
    nrng = np.random.default_rng(11)
    app = Application.objects.create(slug=f"bench-bank-ext-{int(time.time())}", name="Bench bank (external)")
    profile = DetectorProfile.objects.create(application=app, name="bench-ext", axes=AXES, embedder="external")
    profile.application = app
    BankSettings.objects.create(application=app, enabled=True)
    n_flags = round(EXEMPLARS / (1 + TWIN_SHARE))
    started = time.perf_counter()
    _load_flags(app, n_flags, rng)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE feedback_flag")
    print(f"external: {n_flags} approved flags loaded in {time.perf_counter() - started:.1f} s", flush=True)

    started = time.perf_counter()
    samples: list[tuple[str, list[float]]] = []
    after, uploaded = None, 0
    while True:
        page = exemplar_page(profile=profile, missing=True, after=after, limit=1000)
        if not page.items:
            break
        vectors = nrng.standard_normal((len(page.items), EXTERNAL_DIM)).astype(np.float32)
        body = [{"exemplar_id": e.exemplar_id, "vector": v.tolist()} for e, v in zip(page.items, vectors, strict=True)]
        services.vectors_upload(profile=profile, dim=EXTERNAL_DIM, vectors=body)
        samples += [(e.region, body[i]["vector"]) for i, e in enumerate(page.items) if i % 97 == 0]
        uploaded += len(body)
        if page.next_after is None:
            break
        after = page.next_after
    print(f"external: {uploaded} vectors ({EXTERNAL_DIM} dims) fetched and uploaded in "
          f"{time.perf_counter() - started:.1f} s", flush=True)

    profile.refresh_from_db()
    services.cache_clear()
    started = time.perf_counter()
    state = services.bank_rebuild(profile=profile)
    index = state.index
    print(f"external build: {index.size} exemplars ({index.flag_count} flags, {index.missing} without a vector) "
          f"in {time.perf_counter() - started:.1f} s; vectors {index.vectors.nbytes / 1e6:.0f} MB")
    started = time.perf_counter()
    sketch = index.sketch()  # what the first score after a load computes (pruning large blocks)
    print(f"external pruning sketch ({sketch.top.shape[1]} of {EXTERNAL_DIM} dims, "
          f"{(sketch.top.nbytes + sketch.rest.nbytes) / 1e6:.0f} MB) in {time.perf_counter() - started:.2f} s")

    queries = []
    for i in range(QUERIES):
        if i % 2:
            queries.append(rng.choice(samples))
        else:
            queries.append(("prompt" if i % 4 else "answer", nrng.standard_normal(EXTERNAL_DIM).tolist()))
    energies = {axis: (0.3, 0.5) for axis in AXES}

    def run() -> tuple[list[float], int]:
        times, moved = [], 0
        for region, vector in queries:
            t0 = time.perf_counter()
            result = services.score(application=app, detector="bench-ext", region=region, text="",
                                    axis_energy=energies, embedding=vector)
            times.append(time.perf_counter() - t0)
            moved += any(s.match is not None for s in result.axes.values())
        return times, moved

    run()  # warm up
    times, moved = run()
    ms = 1000
    score_p95 = p95(times) * ms
    print(f"external score p95 ({len(AXES)} axes, {QUERIES} queries, {moved} moved an axis, "
          f"{index.size}x{EXTERNAL_DIM}): {score_p95:.2f} ms (median {sorted(times)[len(times) // 2] * ms:.2f} ms); "
          f"target < {TARGET_MS:.0f} ms")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'PASS' if score_p95 < TARGET_MS else 'MISS'}: external score p95 {score_p95:.2f} ms "
          f"vs target {TARGET_MS:.0f} ms")


def console_main() -> None:
    import numpy as np
    from django.db import connection

    from consoles.models import Application
    from exemplars import services
    from exemplars.models import BankSettings, DetectorProfile

    rng = random.Random(7)
    app = Application.objects.create(slug=f"bench-bank-{int(time.time())}", name="Bench bank")
    profile = DetectorProfile.objects.create(application=app, name="bench", axes=AXES)
    settings_row = BankSettings.objects.create(application=app, enabled=True)
    n_flags = round(EXEMPLARS / (1 + TWIN_SHARE))
    started = time.perf_counter()
    samples = _load_flags(app, n_flags, rng)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE feedback_flag")
    print(f"database: {connection.vendor}; {n_flags} approved flags loaded in {time.perf_counter() - started:.1f} s; "
          f"embedder {services.embedder().id}")

    services.cache_clear()
    started = time.perf_counter()
    state = services.bank_rebuild(profile=profile)
    build_s = time.perf_counter() - started
    index = state.index
    print(f"build: {index.size} exemplars ({index.flag_count} flags) in {build_s:.1f} s "
          f"(embedding {state.seconds:.1f} s); vectors {index.vectors.nbytes / 1e6:.0f} MB")

    services.cache_clear()  # a restarted server process
    started = time.perf_counter()
    again = services.bank_load(profile=profile)
    print(f"load after a restart: {time.perf_counter() - started:.2f} s, re-embedded: {again.built}")

    queries = []
    for i in range(QUERIES):
        if i % 2:
            queries.append(rng.choice(samples))
        else:
            queries.append(("prompt" if i % 4 else "answer", _text(rng)))
    energies = {axis: (0.3, 0.5) for axis in AXES}

    def run(enabled: bool) -> tuple[list[float], int]:
        BankSettings.objects.filter(pk=settings_row.pk).update(enabled=enabled)
        times, moved = [], 0
        for region, text in queries:
            t0 = time.perf_counter()
            result = services.score(application=app, detector="bench", region=region, text=text,
                                    axis_energy=energies)
            times.append(time.perf_counter() - t0)
            moved += any(s.match is not None for s in result.axes.values())
        return times, moved

    run(True)  # warm up (the bank is already in memory; this warms caches and the connection)
    disabled, _ = run(False)
    enabled, moved = run(True)
    embed_times = []
    for _, text in queries:
        t0 = time.perf_counter()
        services.embedder().embed([text])
        embed_times.append(time.perf_counter() - t0)

    region_rows = int(np.count_nonzero(index.row_region == 0))
    block = np.ascontiguousarray(index.vectors[index.row_region == 0])
    query = index.vectors[0].copy()
    single, blas_region, blas_all = [], [], []
    for _ in range(QUERIES):
        t0 = time.perf_counter()
        np.einsum("ij,j->i", block, query)
        single.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        block @ query
        blas_region.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        index.vectors @ query
        blas_all.append(time.perf_counter() - t0)

    ms = 1000
    score_p95 = p95(enabled) * ms
    print(f"score p95 (bank enabled, {len(AXES)} axes, {QUERIES} queries, {moved} moved an axis): "
          f"{score_p95:.2f} ms (median {sorted(enabled)[len(enabled) // 2] * ms:.2f} ms); target < {TARGET_MS:.0f} ms")
    print(f"reference: bank disabled (passthrough, one database round trip) p95 {p95(disabled) * ms:.2f} ms "
          f"(median {sorted(disabled)[len(disabled) // 2] * ms:.2f} ms); "
          f"embedding the query alone p95 {p95(embed_times) * ms:.2f} ms")
    shape = f"{region_rows}x{index.vectors.shape[1]}"
    print(f"reference: bare single-threaded mat-vec {shape} (one region, what a score scans) p95 "
          f"{p95(single) * ms:.2f} ms (median {sorted(single)[len(single) // 2] * ms:.2f} ms)")
    print(f"reference: numpy BLAS mat-vec (its default threads) {shape} p95 {p95(blas_region) * ms:.2f} ms; "
          f"whole bank {index.size}x{index.vectors.shape[1]} p95 {p95(blas_all) * ms:.2f} ms")
    print(f"ratio: score / disabled {p95(enabled) / p95(disabled):.1f}x; "
          f"score / bare single-threaded region mat-vec {p95(enabled) / p95(single):.1f}x")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'PASS' if score_p95 < TARGET_MS else 'MISS'}: score p95 {score_p95:.2f} ms vs target {TARGET_MS:.0f} ms")
