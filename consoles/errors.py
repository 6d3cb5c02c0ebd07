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

    def add_to_form(self, form) -> None:
        """Show this refusal on a screen's form: each named field's message under that
        field (under the form when the form has no such field, or only a hidden one the
        person cannot see, such as the version they loaded), else the message."""
        for field, message in (self.fields or {"__all__": self.message}).items():
            if field in form.fields and form.fields[field].widget.is_hidden:
                form.add_error(None, self.message)  # the field's terse reason means nothing on its own
            else:
                form.add_error(field if field in form.fields else None, message)


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


class RateLimited(DomainError):
    """Too many requests in the current window; `retry_after` seconds until it ends."""

    status = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int, **kwargs) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after
