"""Errors that stop a benchmark before it measures anything (bad settings, unusable server).

Failures of single requests are never exceptions: they are records with an `error`.
"""


class BenchError(Exception):
    """The benchmark cannot start: the message says what to change."""


class PromptError(BenchError):
    """No prompt of the asked token length could be made."""
