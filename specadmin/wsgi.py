"""WSGI entry point.

gunicorn runs no system checks: the ones that guard private files and the secret key run
here, so a world-readable database or a weak key stops the server instead of serving
(specadmin/checks.py).
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "specadmin.settings")
application = get_wsgi_application()

from specadmin.checks import refuse_unsafe_files  # noqa: E402 (needs the loaded apps)

refuse_unsafe_files()
