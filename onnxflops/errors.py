"""Errors a user can act on: each renders as one line naming what is at fault."""


class OnnxFlopsError(Exception):
    """A problem with the user's input (file, shape, option), reported as one line by the CLI."""


class Uncostable(Exception):
    """Raised by a cost rule when a node cannot be costed; the reason goes to `uncosted`."""
