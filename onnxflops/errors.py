"""Errors a user can act on: each renders as one line naming what is at fault."""


class OnnxFlopsError(Exception):
    """A problem with the user's input (file, shape, option), reported as one line by the CLI."""

    def __init__(self, message: str):
        # One line whatever names it quotes: a name may hold line breaks.
        super().__init__(str(message).replace("\r", "\\r").replace("\n", "\\n"))


class Uncostable(Exception):
    """Raised by a cost rule when a node cannot be costed; the reason goes to `uncosted`."""
