"""`POST /api/v1/score`: a detector's scores adjusted by the application's exemplar bank.

Thin: parse (ninja schema) -> tenant (Principal) -> services.score -> serialise.
"""

from typing import Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from consoles.access import Principal
from consoles.api import ERRORS
from consoles.models import Role
from consoles.schemas import StrictIn

from .services import MAX_AXES, MAX_SCORE_TEXT, score

router = Router(tags=["exemplar bank"])


class AxisEnergyIn(Schema):
    model_config = ConfigDict(extra="forbid")

    p_detector: float = Field(ge=0, le=1, description="The detector's probability for this axis.")
    threshold: float = Field(ge=0, le=1, description="The axis flags at p >= threshold.")


class ScoreIn(StrictIn):  # unknown fields and NUL in text: 422 naming the field

    detector: str = Field(min_length=1, max_length=64, description="A detector profile of the application.")
    region: Literal["prompt", "answer"]
    text: str = Field(max_length=MAX_SCORE_TEXT, description="The input the detector scored.")
    axis_energy: dict[str, AxisEnergyIn] = Field(
        min_length=1, max_length=MAX_AXES, description="axis -> the detector's score; axes of the profile only."
    )
    application_id: str | None = Field(
        None, description="The application's slug: optional with an application token (must match), "
        "required with a personal token or a session."
    )


class ExemplarMatchOut(Schema):
    verdict: Literal["false_negative", "false_positive"]
    sim: float = Field(description="Cosine similarity (a twin's times its weight).")
    flag_id: str
    source: Literal["flag", "twin"]


class AxisScoreOut(Schema):
    p_detector: float
    threshold: float
    p: float = Field(description="After the bank: raised above or suppressed below the threshold on a match.")
    flag: bool
    exemplar_match: ExemplarMatchOut | None = None


class BankOut(Schema):
    enabled: bool
    tau: float
    version: str | None = None


class ScoreOut(Schema):
    detector: str
    region: str
    bank: BankOut
    axis_energy: dict[str, AxisScoreOut]


@router.post("/score", response={200: ScoreOut, **ERRORS}, exclude_none=True,
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
    )
    return result.as_dict()
