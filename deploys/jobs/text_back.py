"""Production's approved text written back into its own unit file, and read back.

A trial candidate may take production's unit name (docs/trials.md, "Candidates"): its push
then replaces production's file. Before production is started again — after that
candidate, whatever happened to it, and once more on the way back (a success, a cancel) —
this step puts the text the trial's approval pinned (`approved_sha256`) back in place and
reads the file back: the host is the truth, so production is only started from a file
whose sha256 is the approved one. Going back to production is part of what the trial's
approval approved: no second approval. Recorded like every write of a unit file: a
`PushedUnit` row and an audit event, in one transaction.
"""

from __future__ import annotations

from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import StepResult, record_push
from deploys.running import record_read
from hostops.channel import TransportError, UnitPushError, push_unit
from hostops.channel.push import sha256_hex, verify_problems

REASON = "production's text back after a trial candidate that took its unit name"
LOADED = ("LoadState", "FragmentPath", "NeedDaemonReload", "LoadError")


def production_text_back(ctx: JobContext, rec: Recorder) -> StepResult:
    """Write production's approved text into its file where it is not there, reload, and
    read the file back: failed (loudly, production not started) unless its sha256 is the
    approved one and systemd loaded it from there."""
    request = ctx.request
    approved = request.approved_sha256
    text = request.unit_text.encode("utf-8")
    if not approved or sha256_hex(text) != approved:
        return StepResult.failed(
            f"production's stored text (sha256 {sha256_hex(text)}) is not its approved one "
            f"({approved or 'nothing'}): nothing written"
        )
    try:
        before = ctx.transport.read_file(ctx.path)
        before_sha = "" if before is None else sha256_hex(before)
        written = before_sha != approved
        if written:
            result = push_unit(
                ctx.transport,
                ctx.unit,
                text,
                unit_dir=ctx.unit_dir,
                expected_previous_sha256=before_sha,
            )
            record_push(ctx, result, REASON)
            rec.log(
                f"wrote production's approved text into {ctx.path} (sha256 {result.sha256}), "
                f"replacing sha256 {before_sha or 'absent'}; systemd reloaded"
            )
        else:
            rec.log(f"{ctx.path} is production's approved text already: nothing written")
        after = ctx.transport.read_file(ctx.path)
    except (UnitPushError, TransportError) as exc:
        return StepResult.failed(
            f"production's approved text could not be written back to {ctx.path}: {exc}"
        )
    after_sha = "" if after is None else sha256_hex(after)
    record_read(
        host=ctx.host,
        unit_name=request.unit_name,
        data=after,
        step="production_text_back",
        request=request,
    )
    rec.read("read_back", {"path": ctx.path, "sha256": after_sha})
    if after_sha != approved:
        return StepResult.failed(
            f"{ctx.path} reads back sha256 {after_sha or 'absent'}, which is not production's "
            f"approved text (sha256 {approved}): production is not started from it",
            read_back_sha256=after_sha,
        )
    props = ctx.transport.unit_properties(ctx.unit, LOADED)
    if props.get("NeedDaemonReload") == "yes":
        ctx.transport.daemon_reload()
        props = ctx.transport.unit_properties(ctx.unit, LOADED)
    problems = verify_problems(props, ctx.path)
    if problems:
        return StepResult.failed(
            f"production's approved text is back in {ctx.path} but systemd did not load it: "
            + "; ".join(problems),
            read_back_sha256=after_sha,
        )
    rec.log(f"read back {ctx.path}: sha256 {after_sha}, production's approved text")
    return StepResult.success(
        read_back_sha256=after_sha, previous_sha256=before_sha, written=written
    )


__all__ = ["production_text_back"]
