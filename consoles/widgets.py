"""Form widgets shared by the screens."""

from django import forms


class IsoDateInput(forms.DateInput):
    """A day typed and shown as YYYY-MM-DD, as every date on the screens is.

    Chromium's `type="date"` shows the browser's locale (`mm/dd/yyyy` in an
    en-US browser) beside ISO dates everywhere else; a text input with a pattern
    keeps one form, and the server still validates what is sent."""

    input_type = "text"

    def __init__(self, attrs: dict | None = None) -> None:
        super().__init__(attrs={"placeholder": "YYYY-MM-DD", "pattern": r"\d{4}-\d{2}-\d{2}", "inputmode": "numeric",
                                "size": 10, "autocomplete": "off", **(attrs or {})}, format="%Y-%m-%d")
