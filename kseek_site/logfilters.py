"""Filters for the site's log records (settings.LOGGING)."""

import logging

from django.core.exceptions import PermissionDenied


class ExpectedDenialsInOneLine(logging.Filter):
    """A 403 is the site working as meant (a viewer opening an operator's page, the admin's read-only models):
    Django logs it as "Forbidden (Permission denied): <path>" with the exception attached, which the console
    printed as a whole traceback. Keep the line, drop the traceback; every other record passes unchanged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = None
            record.exc_text = None
        return True
