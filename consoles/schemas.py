"""The base of the JSON API's input schemas: strict about what a client sends.

- An unknown field is an error naming it (a misspelt field is not silently dropped).
- Text never holds NUL (U+0000): PostgreSQL cannot store it (the insert would fail
  after validation, as a 500) and SQLite would; refusing it here gives the same
  422 naming the field on both databases.
"""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# A detector's score or threshold: a finite JSON number in [0, 1]. Strict, so "0.5"
# and true are refused rather than coerced (they are a client's bug, not a score).
Probability = Annotated[float, Field(strict=True, ge=0, le=1, allow_inf_nan=False)]


def has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list | tuple | set):
        return any(has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    return False


class StrictIn(BaseModel):
    # A plain pydantic model, not ninja's Schema: that one reads its input through
    # a wrapper made for ORM objects, which costs a tenth of a millisecond per
    # request for nothing on a JSON body (ninja takes either as a body).
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if has_nul(value):
            raise ValueError("Must not contain NUL (\\u0000) characters.")
        return value
