"""Database-level append-only guard for audit_auditevent.

PostgreSQL: a BEFORE UPDATE OR DELETE row trigger raises, whoever the client is. TRUNCATE
is deliberately not covered: Django's `flush` (test teardown, `manage.py flush`) empties
tables with TRUNCATE, and wiping a whole database is not the quiet edit this guards against.

SQLite: a BEFORE UPDATE trigger aborts. There is no DELETE trigger, because SQLite's `flush`
empties tables with `DELETE FROM`, which would then fail for every transactional test and
`manage.py flush`; deletes are refused in code and caught by `verifyaudit` (a gap in the
prev_hash links, or the chain head when the newest rows go).

The SQL is inlined (not imported from the app) so this migration never changes meaning.
"""

from django.db import migrations

PG_FORWARD = [
    """
    CREATE OR REPLACE FUNCTION audit_auditevent_refuse_change() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'audit_auditevent is append-only: % of event #% refused', TG_OP, OLD.id
            USING ERRCODE = 'restrict_violation';
    END;
    $$;
    """,
    """
    CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE ON audit_auditevent
    FOR EACH ROW EXECUTE FUNCTION audit_auditevent_refuse_change();
    """,
]
PG_BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;",
    "DROP FUNCTION IF EXISTS audit_auditevent_refuse_change();",
]
SQLITE_FORWARD = [
    """
    CREATE TRIGGER audit_auditevent_no_update
    BEFORE UPDATE ON audit_auditevent
    BEGIN
        SELECT RAISE(ABORT, 'audit_auditevent is append-only: UPDATE refused');
    END;
    """,
]
SQLITE_BACKWARD = ["DROP TRIGGER IF EXISTS audit_auditevent_no_update;"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)  # `%` is PL/pgSQL, not a placeholder

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": PG_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": PG_BACKWARD, "sqlite": SQLITE_BACKWARD}),
        ),
    ]
