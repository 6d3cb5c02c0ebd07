"""Races on PostgreSQL: 2, 4 and 8 curators working the same queues at once.

- Flag decisions through the real API (gunicorn): every curator pages the pending
  flags and decides each with the version it saw. Afterwards, from the database:
  every flag decided exactly once, one review per (flag, version), the stored
  decision is the one the single 200 announced, every loser got 409 `conflict`.
- Flag claims (the queue's "opened by" hold, services in threads): all curators
  claim the same flag at the same instant; exactly one holds it.
- Adjudication queue (services in threads, SELECT ... FOR UPDATE SKIP LOCKED):
  curators loop claim next -> label until the queue is empty. Each entry is
  handed out exactly `labels_wanted` times, to different curators, and ends done.
- Gold promotion: all curators promote the same label at the same instant; one
  revision is written, every other gets a conflict (`already_gold`).
"""

import json
import random
import threading
from collections import Counter

from .server import Server, django_script, migrate, request, scratch_database, server_env
from .table import Row

SEED = """
import json
from django.contrib.auth import get_user_model
from consoles.models import Role
from consoles.services import application_create, membership_set, token_issue
from feedback.services import Actor, flag_submit

app = application_create(slug=SLUG, name=SLUG)
integration = token_issue(name="integration", application=app).token
tokens = {}
for n in range(CURATORS):
    user = get_user_model().objects.create_user(f"{SLUG}-curator{n}")
    membership_set(application=app, user=user, role=Role.CURATOR)
    tokens[user.username] = token_issue(name="laptop", user=user).secret
for i in range(FLAGS):
    flag_submit(application=app, actor=Actor(token=integration), region="answer", problem="fabricated",
                message_id=f"race-{i}", prompt="p", answer="a")
print(json.dumps(tokens))
"""

CHECK_FLAGS = """
import json
from django.db.models import Count
from feedback.models import Flag, FlagReview
flags = Flag.objects.filter(application__slug=SLUG)
reviews = FlagReview.objects.filter(flag__in=flags)
per_flag = Counter(reviews.values_list("flag__public_id", flat=True))
per_version = reviews.values("flag_id", "flag_version").annotate(n=Count("id")).filter(n__gt=1).count()
print(json.dumps({
    "flags": flags.count(),
    "pending": flags.filter(status="pending").count(),
    "reviews": reviews.count(),
    "decided_once": sum(1 for n in per_flag.values() if n == 1),
    "twice_per_version": per_version,
    "status": dict(flags.values_list("public_id", "status")),
}))
""".replace("from django.db.models import Count", "from collections import Counter\nfrom django.db.models import Count")

THREADED = """
import json, threading
from django.contrib.auth import get_user_model
from django.db import connection
from adjudication.models import AdjudicationEvent, CaseLabel, GoldLabelRevision, QueueEntry
from adjudication.schemas import CaseIn
from adjudication.services import case_import, gold_promote, label_submit, queue_claim_next, queue_enqueue
from adjudication.tests.factories import case_payload
from consoles.errors import Conflict
from consoles.models import Application, Role
from consoles.services import membership_set
from feedback.models import Flag
from consoles.models import ApiToken
from feedback.services import Actor, flag_claim, flag_submit

app = Application.objects.get(slug=SLUG)
users = list(get_user_model().objects.filter(username__startswith=SLUG + "-curator").order_by("username"))
result = {}

def run_all(target, args_list):
    barrier = threading.Barrier(len(args_list))
    errors = []
    def wrapped(*args):
        try:
            barrier.wait()
            target(*args)
        except BaseException as exc:
            errors.append(repr(exc))
        finally:
            connection.close()
    threads = [threading.Thread(target=wrapped, args=args) for args in args_list]
    for t in threads: t.start()
    for t in threads: t.join()
    return errors

# Flag claims: every curator claims the same pending flag at once, flag after flag.
integration = ApiToken.objects.get(application=app, kind="application")
fresh = [flag_submit(application=app, actor=Actor(token=integration), region="answer", problem="fabricated",
                     message_id=f"claim-{i}", prompt="p", answer="a").flag for i in range(CLAIM_FLAGS)]
won = Counter(); errors = []
for flag in fresh:
    def claim(user, flag=flag):
        if flag_claim(flag=Flag.objects.get(pk=flag.pk), user=user):
            won[flag.pk] += 1
    errors += run_all(claim, [(u,) for u in users])
result["flag_claims"] = {"flags": CLAIM_FLAGS, "held_once": sum(1 for n in won.values() if n == 1),
                         "held_twice": sum(1 for n in won.values() if n > 1), "errors": errors[:3]}

# Adjudication queue: claim next -> label, until nothing is left.
cases = [case_import(application=app, data=CaseIn.model_validate(case_payload(f"race-case-{i}")), actor=None).case
         for i in range(CASES)]
for case in cases:
    queue_enqueue(application=app, case=case, selection_reason="race", actor=None)
handed = Counter(); conflicts = Counter()
def curator(user):
    for _ in range(2000):  # bounded
        entry = queue_claim_next(application=app, user=user)
        if entry is None:
            # Nothing free right now; stop only when nothing is left for this curator at all
            # (another curator may still hold an entry this one must label after them).
            mine = CaseLabel.objects.filter(reviewer=user).values("case")
            if not QueueEntry.objects.filter(case__in=cases, state="open").exclude(case__in=mine).exists():
                return
            time.sleep(0.02)
            continue
        handed[(entry.pk, user.pk)] += 1
        try:
            label_submit(application=app, case=entry.case, reviewer=user, label=app.case_labels[0], rationale="race")
        except Conflict as exc:
            conflicts[exc.code] += 1
errors = run_all(curator, [(u,) for u in users])
entries = QueueEntry.objects.filter(case__in=cases)
claimed_events = Counter(AdjudicationEvent.objects.filter(case__in=cases, kind="claimed").values_list("case_id", flat=True))
labels = Counter(CaseLabel.objects.filter(case__in=cases).values_list("case_id", flat=True))
wanted = entries.first().labels_wanted
result["adjudication"] = {
    "entries": entries.count(), "done": entries.filter(state="done").count(), "labels_wanted": wanted,
    "handed_out": sum(handed.values()), "same_curator_twice": sum(1 for n in handed.values() if n > 1),
    "claims_as_wanted": sum(1 for c in cases if claimed_events[c.pk] == wanted),
    "labels_as_wanted": sum(1 for c in cases if labels[c.pk] == wanted),
    "conflicts": dict(conflicts), "errors": errors[:3],
}

# Gold: everyone labelled one case; all promote the first curator's label at once.
case = case_import(application=app, data=CaseIn.model_validate(case_payload("race-gold")), actor=None).case
for user in users:
    label_submit(application=app, case=case, reviewer=user, label=app.case_labels[0], rationale="gold race")
label = CaseLabel.objects.get(case=case, reviewer=users[0])
outcomes = Counter()
def promote(user):
    try:
        gold_promote(application=app, case=case, label=label, adjudicator=user)
        outcomes["promoted"] += 1
    except Conflict as exc:
        outcomes["conflict:" + exc.code] += 1
errors = run_all(promote, [(u,) for u in users])
result["gold"] = {"outcomes": dict(outcomes), "revisions": GoldLabelRevision.objects.filter(case=case).count(),
                  "errors": errors[:3]}
print(json.dumps(result))
""".replace("import json, threading", "import json, threading, time\nfrom collections import Counter")


def _flag_decisions(server: Server, slug: str, tokens: dict[str, str]) -> dict:
    """Every curator decides every pending flag it sees, with the version it saw."""
    outcomes: Counter = Counter()
    winners: dict[str, str] = {}
    bad: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(tokens))

    def curator(name: str, token: str) -> None:
        rng = random.Random(name)
        barrier.wait()
        for _ in range(200):  # bounded: each round decides at least one flag
            status, raw, _ = request("GET", server.url(
                f"/api/v1/flags?application_id={slug}&status=pending&sort=created&limit=20"), token=token)
            items = json.loads(raw)["items"] if status == 200 else []
            if not items:
                return
            for item in items:
                decision = rng.choice(["approved", "rejected"])
                status, raw, _ = request("POST", server.url(f"/api/v1/flags/{item['id']}/review"),
                                         {"status": decision, "version": item["version"], "note": name}, token)
                with lock:
                    if status == 200:
                        outcomes["won"] += 1
                        if item["id"] in winners:
                            bad.append(f"{item['id']} announced twice")
                        winners[item["id"]] = decision
                    elif status == 409 and json.loads(raw)["error"]["code"] == "conflict" and (
                            json.loads(raw)["error"].get("current")):
                        outcomes["conflict"] += 1
                    else:
                        outcomes[f"other:{status}"] += 1
                        bad.append(f"{status} {raw[:200]!r}")

    threads = [threading.Thread(target=curator, args=item) for item in tokens.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"outcomes": outcomes, "winners": winners, "bad": bad}


def race(env: dict[str, str], server: Server, curators: int, flags: int, cases: int) -> list[Row]:
    slug = f"races-{curators}"
    head = f"SLUG = {slug!r}\nCURATORS = {curators}\nFLAGS = {flags}\nCLAIM_FLAGS = {min(20, flags)}\nCASES = {cases}\n"
    tokens = json.loads(django_script(env, head + SEED).splitlines()[-1])
    api = _flag_decisions(server, slug, tokens)
    db = json.loads(django_script(env, head + CHECK_FLAGS).splitlines()[-1])
    threaded = json.loads(django_script(env, head + THREADED).splitlines()[-1])
    label = f"{curators} curators"
    overwritten = sum(1 for fid, decision in api["winners"].items() if db["status"].get(fid) != decision)
    flags_ok = (db["pending"] == 0 and db["decided_once"] == flags == db["reviews"] == api["outcomes"]["won"]
                and db["twice_per_version"] == 0 and overwritten == 0 and not api["bad"])
    fc, adj, gold = threaded["flag_claims"], threaded["adjudication"], threaded["gold"]
    adj_ok = (adj["done"] == adj["entries"] == cases and adj["claims_as_wanted"] == cases
              and adj["labels_as_wanted"] == cases and adj["same_curator_twice"] == 0
              and adj["handed_out"] == cases * adj["labels_wanted"] and not adj["errors"])
    gold_ok = (gold["outcomes"].get("promoted") == 1 and gold["revisions"] == 1
               and gold["outcomes"].get("conflict:already_gold", 0) == curators - 1 and not gold["errors"])
    for problem in api["bad"][:3] + fc["errors"] + adj["errors"] + gold["errors"]:
        print(f"  race problem ({label}): {problem}")
    return [
        Row(f"races: flag decisions via API, {label}", "postgresql",
            f"{db['decided_once']}/{flags} decided once, {db['twice_per_version']} twice per version, "
            f"{overwritten} overwritten, {api['outcomes']['conflict']} x 409, other {len(api['bad'])}",
            "each once, 0, 0, losers 409", flags_ok),
        Row(f"races: flag claims, {label}", "postgresql",
            f"{fc['held_once']}/{fc['flags']} held by one, {fc['held_twice']} by two",
            "all by one", fc["held_once"] == fc["flags"] and fc["held_twice"] == 0 and not fc["errors"]),
        Row(f"races: adjudication claim+label, {label}", "postgresql",
            f"{adj['done']}/{cases} done, handed out {adj['handed_out']} (= {adj['labels_wanted']} per entry: "
            f"{adj['claims_as_wanted']}), same curator twice {adj['same_curator_twice']}, conflicts {adj['conflicts']}",
            f"{adj['labels_wanted']} claims per entry, 0 twice", adj_ok),
        Row(f"races: gold promotion, {label}", "postgresql",
            f"{gold['outcomes']}, {gold['revisions']} revision(s)",
            f"1 promoted, {curators - 1} conflict", gold_ok),
    ]


def run(quick: bool) -> list[Row]:
    flags, cases = (40, 24) if quick else (200, 100)
    rows: list[Row] = []
    with scratch_database("postgresql", "reliability_races") as url:
        env = server_env(url)
        migrate(env)
        with Server(env, workers=4) as server:
            for curators in (2, 4, 8):
                rows += race(env, server, curators, flags, cases)
    return rows
