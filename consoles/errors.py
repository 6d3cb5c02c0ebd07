"""Domain errors with stable codes, turned into 4xx bodies, form errors or exit codes."""


class DomainError(Exception):
    """A rule of the domain refused the request; nothing was written."""

    status = 400
    code = "invalid"

    def __init__(
        self, message: str, *, code: str | None = None, fields: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.fields = fields or {}

    def as_dict(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, "fields": self.fields}}


class NotFound(DomainError):
    status = 404
    code = "not_found"


class PermissionDeniedError(DomainError):
    status = 403
    code = "forbidden"


class Conflict(DomainError):
    """The state changed since the caller saw it (stale version, race)."""

    status = 409
    code = "conflict"

    def __init__(self, message: str, *, current: dict | None = None, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.current = current

    def as_dict(self) -> dict:
        body = super().as_dict()
        if self.current is not None:
            body["error"]["current"] = self.current
        return body


class InvalidInput(DomainError):
    status = 422
    code = "validation_error"
