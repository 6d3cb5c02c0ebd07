"""Logging filters for the console's handlers (settings.LOGGING)."""

import logging


class ClientErrorsInOneLine(logging.Filter):
    """Drop the traceback from a request's 4xx record (`django.request` logs a
    PermissionDenied with its exception): the line says what and where."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
