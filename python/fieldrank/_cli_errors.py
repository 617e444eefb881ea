"""The command line's error type, apart from :mod:`fieldrank.cli`.

Subcommand modules (:mod:`fieldrank.evaluation._command`, :mod:`fieldrank.evaluation.calibrate`) raise it;
they import it from here so that the CLI, which imports them, is not imported back (no cycle).
:mod:`fieldrank.cli` re-exports it: ``fieldrank.cli.CommandError`` is the public name.
"""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A user mistake: printed as one line on stderr, exit status 1."""
