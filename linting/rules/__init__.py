"""Every rule; importing this package registers the whole catalog
(`linting.rules.registry` holds it): the module of each live code of the code table
(`linting.rules.codes`) is imported, which runs its `@rule` decorator."""

import importlib

from linting.rules.codes import REMOVED, RULE_CODES

for _row in RULE_CODES:
    if _row.status is not REMOVED:
        importlib.import_module(_row.import_path)
