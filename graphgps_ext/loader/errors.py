"""Errors for data that is missing or corrupt.

``main.py`` prints a :class:`DataError` as one paragraph (what is wrong,
where, how to fix it: which file, which folder, the URL it comes from),
without a traceback, and exits with code 5.
"""


class DataError(Exception):
    """The dataset cannot be read: the message says what, where and how to
    fix it."""


class DatasetNotFoundError(DataError, FileNotFoundError):
    """Raw dataset files are missing and cannot be downloaded."""


class DataCorruptError(DataError):
    """Raw files are truncated or corrupt: processing them fails, or what
    they give fails the checks of :func:`graphgps_ext.loader.integrity.check_storage`."""
