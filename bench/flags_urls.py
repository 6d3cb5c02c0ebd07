"""The console's URLs plus three references for the ingest benchmark:

- /bench/echo: the bare Django JSON endpoint (parse the body, answer JSON);
- /bench/floor/flags: POST /api/v1/flags up to its write: the same ninja
  operation shape, token authentication, body schema, checks and answer, with
  nothing stored. What separates it from /api/v1/flags is the storage alone.
- /bench/ceiling/flags: a flag written whole in its request, at the least it
  can cost in this stack: a plain view that looks the token up, then writes the
  flag and its `created` event through the database driver itself (on SQLite in
  one transaction, on PostgreSQL in one statement), with no ninja, no ORM, no
  checks and no duplicate handling: never serve this. Its ratio to the bare
  endpoint was the most the design before receipts (`feedback.receipts`) could
  reach on this machine.
"""

import hashlib
import json

from django.db import connection
from django.db.models import JSONField
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI

from consoles.api import bearer_auth
from consoles.models import ApiToken, Role
from consoles.tokens import token_digest
from consoles.urls import urlpatterns as console_urlpatterns
from feedback.api import FlagIn, _actor, flag_out
from feedback.models import Flag, FlagEvent
from feedback.services import flag_prepare


@csrf_exempt
def echo(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    return JsonResponse({"id": body.get("message_id"), "status": "pending"}, status=201)


floor = NinjaAPI(urls_namespace="bench-floor", auth=[bearer_auth], docs_url=None, openapi_url=None)


@floor.post("/flags")
def flag_unstored(request: HttpRequest, payload: FlagIn):
    principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    flag = flag_prepare(
        application=application,
        actor=_actor(principal),
        capture_reason=payload.capture_reason or "",
        **payload.model_dump(exclude={"application_id", "capture_reason"}),
    )
    return floor.create_response(request, flag_out(flag), status=201)


class _Row:
    """One model's INSERT for the driver, and its columns' default values (built once)."""

    def __init__(self, model, returning: bool) -> None:
        fields = [f for f in model._meta.local_concrete_fields if not f.primary_key]
        mark = "?" if connection.vendor == "sqlite" else "%s"
        self.sql = (f"INSERT INTO {model._meta.db_table} ({', '.join(f.column for f in fields)}) "  # noqa: S608
                    f"VALUES ({', '.join([mark] * len(fields))})" + (" RETURNING id" if returning else ""))
        self.attnames = [f.attname for f in fields]
        self.defaults = {f.attname: json.dumps(f.get_default()) if isinstance(f, JSONField) else f.get_default()
                         for f in fields}

    def values(self, skip: str = "", **given) -> list:
        return [given[name] if name in given else self.defaults[name] for name in self.attnames if name != skip]


_rows: dict = {}


@csrf_exempt
def ceiling(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    if not _rows:
        _rows.update(flag=_Row(Flag, returning=True), event=_Row(FlagEvent, returning=False))
        if connection.vendor == "postgresql":
            # The event's flag_id is the key the flag's INSERT returns: a data-modifying CTE.
            columns = _rows["event"].sql.split(" VALUES ")[0]
            marks = ["(SELECT id FROM parent_row)" if name == "flag_id" else "%s" for name in _rows["event"].attnames]
            _rows["pair"] = f"WITH parent_row AS ({_rows['flag'].sql}) {columns} VALUES ({', '.join(marks)})"
    connection.ensure_connection()
    cursor = connection.connection.cursor()
    mark = "?" if connection.vendor == "sqlite" else "%s"
    cursor.execute(f"SELECT id, application_id FROM {ApiToken._meta.db_table} "  # noqa: S608
                   f"WHERE digest = {mark} AND revoked_at IS NULL",
                   (token_digest(request.headers.get("Authorization", "").removeprefix("Bearer ")),))
    found = cursor.fetchone()
    if found is None:
        return JsonResponse({"error": {"code": "unauthorized"}}, status=401)
    token_id, application_id = found
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    public_id = "fb_" + hashlib.sha256(body["message_id"].encode()).hexdigest()[:16]
    flag = _rows["flag"].values(
        public_id=public_id, application_id=application_id, region=body["region"], problem=body["problem"],
        suggested_axis="hallucination", status="pending", prompt=body["prompt"], answer=body["answer"],
        detector_scores=json.dumps(body["detector_scores"]), note=body["note"], message_id=body["message_id"],
        session_id=body["session_id"], author_kind="end_user", author_token_id=token_id, created_at=now,
        updated_at=now)
    event = {"application_id": application_id, "action": "created", "to_status": "pending", "actor_kind": "token",
             "actor_token_id": token_id, "created_at": now}
    if connection.vendor == "postgresql":
        cursor.execute(_rows["pair"], flag + _rows["event"].values(skip="flag_id", **event))
        return _ceiling_answer(public_id, now)
    cursor.execute("BEGIN IMMEDIATE")
    try:
        cursor.execute(_rows["flag"].sql, flag)
        flag_id = cursor.fetchone()[0]
        cursor.execute(_rows["event"].sql, _rows["event"].values(**event, flag_id=flag_id))
        cursor.execute("COMMIT")
    except Exception:
        cursor.execute("ROLLBACK")
        raise
    return _ceiling_answer(public_id, now)


def _ceiling_answer(public_id: str, now) -> JsonResponse:
    return JsonResponse({"id": public_id, "status": "pending", "suggested_axis": "hallucination",
                         "created_at": str(now)}, status=201)


urlpatterns = [
    path("bench/echo", echo),
    path("bench/floor/", floor.urls),
    path("bench/ceiling/flags", ceiling),
    *console_urlpatterns,
]
