"""`POST /api/v1/score`: a detector's scores adjusted by the application's exemplar bank.

Thin: parse (ninja schema) -> tenant (Principal) -> services.score -> serialise.
"""

from typing import Literal

from django.http import HttpRequest
from ninja import Field, Router, Schema
from pydantic import ConfigDict

from consoles.access import Principal
from consoles.api import WRITE_ERRORS
from consoles.models import Role
from consoles.schemas import Probability, StrictIn

from .services import MAX_AXES, MAX_SCORE_TEXT, score

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
    )
    return result.as_dict()
