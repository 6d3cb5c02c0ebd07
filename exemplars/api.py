"""`POST /api/v1/score`: a detector's scores adjusted by the application's exemplar bank.

Thin: parse (ninja schema) -> tenant (Principal) -> services.score -> serialise.
"""

import base64
import binascii
import json
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema
from pydantic import ConfigDict

from consoles.access import Principal
from consoles.api import CURSOR_QUERY, ERRORS, WRITE_ERRORS
from consoles.errors import InvalidInput, NotFound
from consoles.models import Role
from consoles.schemas import Probability, StrictIn

from .models import MAX_DIM, DetectorProfile
from .selectors import exemplar_page, profile_get
from .services import (
    MAX_AXES,
    MAX_SCORE_TEXT,
    MAX_VECTORS_PER_UPLOAD,
    is_external,
    score,
    vectors_upload,
)

router = Router(tags=["exemplar bank"])


class AxisEnergyIn(Schema):
    model_config = ConfigDict(extra="forbid")

    p_detector: Probability = Field(description="The detector's probability for this axis, in [0, 1].")
    threshold: Probability = Field(description="The axis flags at p >= threshold, in [0, 1].")


class ScoreIn(StrictIn):  # unknown fields and NUL in text: 422 naming the field

    detector: str = Field(min_length=1, max_length=64, description="A detector profile of the application.")
    region: Literal["prompt", "answer"] = Field(description="Whether the text is a user message or an answer.")
    text: str = Field(max_length=MAX_SCORE_TEXT, description="The input the detector scored.")
    axis_energy: dict[str, AxisEnergyIn] = Field(
        min_length=1, max_length=MAX_AXES, description="axis -> the detector's score; axes of the profile only."
    )
    application_id: str | None = Field(
        None, description="The application's slug: optional with an application token (must match), "
        "required with a personal token or a session."
    )
    embedding: list[float] | None = Field(
        None, max_length=MAX_DIM,
        description="The query's vector in the detector's own space: required for a profile whose embedder "
        "is `external` (its dimension), refused for the others. Normalised by the console.",
    )


class ExemplarMatchOut(Schema):
    verdict: Literal["false_negative", "false_positive"] = Field(
        description="The matched exemplar's verdict: `false_negative` raises the axis, `false_positive` suppresses it."
    )
    sim: float = Field(description="Cosine similarity (a twin's times its weight).")
    flag_id: str = Field(description="The approved flag the exemplar comes from.")
    source: Literal["flag", "twin"] = Field(description="Whether the flag's own text or its benign twin matched.")


class AxisScoreOut(Schema):
    p_detector: float = Field(description="The detector's probability, as sent.")
    threshold: float = Field(description="The axis's threshold, as sent.")
    p: float = Field(description="After the bank: raised above or suppressed below the threshold on a match.")
    flag: bool = Field(description="`p >= threshold`.")
    exemplar_match: ExemplarMatchOut | None = Field(
        None, description="The exemplar that moved the axis; absent when none did."
    )


class BankOut(Schema):
    enabled: bool = Field(description="Whether the application's bank is on (off by default).")
    tau: float = Field(description="The cosine similarity a match needs.")
    version: str | None = Field(None, description="The bank version consulted; absent when the bank is off "
                                "or not built yet.")
    missing_vectors: int | None = Field(
        None, description="External profiles: approved exemplars the detector has not uploaded a vector for "
        "(not in the bank). Absent for console-embedded profiles and when the bank was not consulted.",
    )


class ScoreOut(Schema):
    detector: str = Field(description="The detector profile, as sent.")
    region: Literal["prompt", "answer"] = Field(description="As sent.")
    bank: BankOut = Field(description="The exemplar bank consulted.")
    axis_energy: dict[str, AxisScoreOut] = Field(description="axis -> its score, for every axis sent.")


@router.post("/score", response={200: ScoreOut, **WRITE_ERRORS}, exclude_none=True,
             summary="Score an input: the detector's axes, adjusted by the exemplar bank")
def score_endpoint(request: HttpRequest, payload: ScoreIn):
    """For each axis: a match (cosine >= τ) to an approved false-negative exemplar raises
    the axis above its threshold; a match to a false-positive exemplar (or a benign twin)
    suppresses it below; a danger match always wins. `exemplar_match` says which flag
    moved the axis. With the bank disabled (the default) every axis is exactly the
    detector's own (`flag` = `p_detector >= threshold`).

    Authenticate with the application's token (the runtime), or a member's personal
    token or session naming `application_id`. Unknown `detector` or an axis the
    profile lacks: 422 naming the field.
    """
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.VIEWER)
    result = score(
        application=application, detector=payload.detector, region=payload.region, text=payload.text,
        axis_energy={axis: (e.p_detector, e.threshold) for axis, e in payload.axis_energy.items()},
        embedding=payload.embedding,
    )
    return result.as_dict()


# --- Detector-owned embeddings -------------------------------------------------------------

PROFILE_PATH = Path(description="The detector profile's name (its `detector` in /score).")
APPLICATION_QUERY = Query(None, description="The application's slug: optional with an application token, "
                          "required with a personal token or a session.")


def _external_profile(request: HttpRequest, name: str, application_id: str | None, role: str) -> DetectorProfile:
    principal: Principal = request.auth
    application = principal.application_for(application_id, role=role)
    profile = profile_get(application=application, name=name) if "\x00" not in name else None
    if profile is None:
        raise NotFound("No such detector profile in this application.", fields={"profile": "unknown"})
    if not is_external(profile):
        raise InvalidInput(f"Detector {name!r} is embedded by the console; it has no detector-owned vectors.",
                           code="not_external", fields={"profile": "its embedder is not external"})
    return profile


def _encode_cursor(profile: DetectorProfile, missing: bool, after: str) -> str:
    raw = json.dumps(["exemplars", profile.pk, missing, after], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, profile: DetectorProfile, missing: bool) -> str | None:
    """The flag a page starts after; a cursor of another list or filter starts over."""
    try:
        scope, pk, was_missing, after = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, binascii.Error):
        raise InvalidInput("Invalid cursor.", fields={"cursor": "invalid"}) from None
    if scope != "exemplars" or not isinstance(after, str):
        raise InvalidInput("Invalid cursor.", fields={"cursor": "invalid"})
    return after if (pk, was_missing) == (profile.pk, missing) else None


class ExemplarOut(Schema):
    exemplar_id: str = Field(description="Upload its vector under this id. A corrected text is a new id.")
    flag_id: str = Field(description="The approved flag it comes from.")
    source: Literal["flag", "twin"] = Field(description="The flag's own text, or its contrastive benign twin.")
    region: Literal["prompt", "answer"] = Field(description="Whose text it is (embed it as the detector would).")
    text: str = Field(description="The text to embed.")
    has_vector: bool = Field(description="Whether a vector is stored for it.")


class ExemplarPageOut(Schema):
    items: list[ExemplarOut] = Field(description="At most `limit` exemplars, in flag order.")
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last page.")


@router.get("/bank/{profile}/exemplars", response={200: ExemplarPageOut, **ERRORS},
            summary="The exemplars of an external profile's bank (what the detector must embed)")
def exemplar_list(
    request: HttpRequest,
    profile: str = PROFILE_PATH,
    missing: bool = Query(False, description="Only exemplars with no vector yet."),
    cursor: str | None = CURSOR_QUERY,
    limit: int = Query(200, ge=2, le=1000, description="Exemplars per page."),
    application_id: str | None = APPLICATION_QUERY,
):
    """The texts of the approved flags (and their benign twins) whose axis the profile has, in flag
    order. Embed each `text` with the detector's own function and upload the vectors with
    `PUT .../vectors`. Follow `next_cursor`; no total is computed.

    The application's token, or a member's personal token or session naming `application_id`.
    """
    row = _external_profile(request, profile, application_id, Role.VIEWER)
    after = _decode_cursor(cursor, row, missing) if cursor else None
    page = exemplar_page(profile=row, missing=missing, after=after, limit=limit)
    return {
        "items": [e.__dict__ for e in page.items],
        "next_cursor": _encode_cursor(row, missing, page.next_after) if page.next_after else None,
    }


class VectorIn(StrictIn):
    exemplar_id: str = Field(max_length=40, description="From `GET .../exemplars`.")
    vector: list[float] = Field(max_length=MAX_DIM, description="`dim` finite numbers, not all zero.")


class VectorsIn(StrictIn):
    dim: int = Field(ge=1, le=MAX_DIM, description="The vectors' size: fixed by the profile's first upload.")
    vectors: list[VectorIn] = Field(min_length=1, max_length=MAX_VECTORS_PER_UPLOAD,
                                    description=f"1 to {MAX_VECTORS_PER_UPLOAD} vectors.")


class VectorsOut(Schema):
    detector: str = Field(description="The profile.")
    dim: int = Field(description="The profile's dimension.")
    created: int = Field(description="Vectors stored for the first time.")
    updated: int = Field(description="Vectors that replaced a different one.")
    unchanged: int = Field(description="Vectors equal to the stored one (after normalisation).")


@router.put("/bank/{profile}/vectors", response={200: VectorsOut, **WRITE_ERRORS},
            summary="Upload the detector's own vectors of exemplars of an external profile")
def vectors_put(request: HttpRequest, payload: VectorsIn, profile: str = PROFILE_PATH,
                application_id: str | None = APPLICATION_QUERY):
    """Each vector is normalised to the unit sphere and stored under its exemplar; all or none
    of a request are stored. A new or changed vector makes a new bank version. 422 naming the
    field for an unknown exemplar, a wrong size, a non-finite number or an all-zero vector.

    The application's token, or a curator's personal token or session naming `application_id`.
    """
    row = _external_profile(request, profile, application_id, Role.CURATOR)
    result = vectors_upload(profile=row, dim=payload.dim,
                            vectors=[{"exemplar_id": v.exemplar_id, "vector": v.vector} for v in payload.vectors])
    return result.as_dict()
