"""Every rule module; importing this package registers the whole catalog."""

from linting.rules import exec_traps  # noqa: F401
