"""Database guard on audit_auditchainhead: the head only moves forward, to an event that
exists with that hash (before it, "delete the last events and move the head back" verified
OK).

PostgreSQL: one row trigger for INSERT, UPDATE and DELETE (TRUNCATE stays possible, for
Django's `flush`, as in 0002). SQLite: INSERT and UPDATE triggers; no DELETE trigger,
because SQLite's `flush` empties tables with `DELETE FROM` (see 0002). Whoever can drop
triggers can still rewrite the head: the signed checkpoints outside the database
(audit/checkpoints.py) are what catches that; this guard stops the quiet edit.

An INSERT must start the head at event #0 (`record()` creates it that way with INSERT … ON
CONFLICT DO NOTHING on every write, so it may not fail while events exist).

The SQL is inlined (not imported from the app) so this migration never changes meaning.
"""

from django.db import migrations

PG_FORWARD = [
    """
    CREATE OR REPLACE FUNCTION audit_chainhead_guard() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            RAISE EXCEPTION 'audit chain head: DELETE refused'
                USING ERRCODE = 'restrict_violation';
        END IF;
        IF NEW.id <> 1 THEN
            RAISE EXCEPTION 'audit chain head: only row 1 exists'
                USING ERRCODE = 'restrict_violation';
        END IF;
        IF TG_OP = 'INSERT' THEN
            IF NEW.last_id <> 0 THEN
                RAISE EXCEPTION 'audit chain head: a new head starts at event #0'
                    USING ERRCODE = 'restrict_violation';
            END IF;
            RETURN NEW;
        END IF;
        IF NEW.last_id < OLD.last_id OR NOT EXISTS (
            SELECT 1 FROM audit_auditevent WHERE id = NEW.last_id AND hash = NEW.last_hash
        ) THEN
            RAISE EXCEPTION 'audit chain head: moves forward only, to an existing event (#% refused)',
                NEW.last_id USING ERRCODE = 'restrict_violation';
        END IF;
        RETURN NEW;
    END;
    $$;
    """,
    """
    CREATE TRIGGER audit_chainhead_guard
    BEFORE INSERT OR UPDATE OR DELETE ON audit_auditchainhead
    FOR EACH ROW EXECUTE FUNCTION audit_chainhead_guard();
    """,
]
PG_BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_chainhead_guard ON audit_auditchainhead;",
    "DROP FUNCTION IF EXISTS audit_chainhead_guard();",
]
SQLITE_FORWARD = [
    """
    CREATE TRIGGER audit_chainhead_insert_guard
    BEFORE INSERT ON audit_auditchainhead
    WHEN NEW.id != 1 OR NEW.last_id != 0
    BEGIN
        SELECT RAISE(ABORT, 'audit chain head: a new head starts at event #0');
    END;
    """,
    """
    CREATE TRIGGER audit_chainhead_forward_only
    BEFORE UPDATE ON audit_auditchainhead
    WHEN NEW.id != OLD.id OR NEW.last_id < OLD.last_id OR NOT EXISTS (
        SELECT 1 FROM audit_auditevent WHERE id = NEW.last_id AND hash = NEW.last_hash
    )
    BEGIN
        SELECT RAISE(ABORT, 'audit chain head: moves forward only, to an existing event');
    END;
    """,
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS audit_chainhead_insert_guard;",
    "DROP TRIGGER IF EXISTS audit_chainhead_forward_only;",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement, params=None)  # `%` is PL/pgSQL, not a placeholder

    return run


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_keyed_chain")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": PG_FORWARD, "sqlite": SQLITE_FORWARD}),
            _run({"postgresql": PG_BACKWARD, "sqlite": SQLITE_BACKWARD}),
        ),
    ]
