"""SD: what systemd itself rejects or ignores while loading the unit file."""

from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Finding, Severity
from linting.rules.registry import register
from linting.systemd.catalog import UNIT_TYPES, load_catalog
from linting.systemd.values import VALIDATORS


def _catalog(ctx: UnitContext):
    return load_catalog(ctx.version)


def _allowed_sections(ctx: UnitContext) -> set[str]:
    unit_type = ctx.unit.unit_type
    if unit_type not in UNIT_TYPES:
        return set()
    return _catalog(ctx).sections_for_unit_type(unit_type)


@register(
    "SD101",
    "unknown-section",
    Severity.ERROR,
    doc="""
    A section systemd does not know for this unit type; all of its settings are ignored.

    What it does:
    Checks every `[Section]` header against the sections of the unit's type for the target
    systemd version. `[X-…]` sections are private extensions and are skipped.

    Why is this bad?
    systemd logs "Unknown section 'Sevice'. Ignoring." and drops every line until the next
    valid header (src/shared/conf-parser.c), so the service runs without those settings.

    Example:
    ```ini
    [Sevice]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """,
)
def check_sections(ctx: UnitContext) -> Iterator[Finding]:
    allowed = _allowed_sections(ctx)
    if not allowed:
        return iter(())
    for header in ctx.unit.headers:
        if header.name in allowed or header.name.startswith("X-"):
            continue
        hint = _catalog(ctx).suggest(header.name, allowed)
        ctx.add(
            "SD101",
            header.span,
            f"unknown section [{header.name}] for a .{ctx.unit.unit_type} unit: systemd "
            "ignores it and every setting in it" + (f"; did you mean [{hint}]?" if hint else ""),
            path=header.path,
        )
    return iter(())


@register(
    "SD102",
    "unknown-key",
    Severity.ERROR,
    doc="""
    A key systemd does not know in this section; the setting is ignored.

    What it does:
    Checks every `Key=` against the keys systemd of the target version accepts in that
    section (tables generated from `systemd --dump-configuration-items`), and suggests the
    closest known key. `X-…` keys are private extensions and are skipped.

    Why is this bad?
    systemd logs "Unknown key name 'Enviroment' in section 'Service', ignoring." and the
    service starts without the setting: a typo in `Environment=` means the variables are
    simply missing at run time.

    Example:
    ```ini
    [Service]
    Enviroment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    ```

    Use instead:
    ```ini
    [Service]
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    ```
    """,
)
def check_keys(ctx: UnitContext) -> Iterator[Finding]:
    allowed = _allowed_sections(ctx)
    if not allowed:
        return iter(())
    catalog = _catalog(ctx)
    for a in ctx.unit.assignments:
        if a.section not in allowed or a.name.startswith("X-"):
            continue
        if catalog.parser(a.section, a.name) is not None:
            continue
        elsewhere = [s for s in sorted(allowed) if catalog.parser(s, a.name) is not None]
        if elsewhere:
            message = (
                f"{a.name}= belongs in the [{elsewhere[0]}] section, not [{a.section}]: "
                "systemd ignores it here"
            )
        else:
            hint = catalog.suggest(a.name, catalog.keys(a.section))
            message = f"unknown key {a.name}= in [{a.section}] (systemd {ctx.version} ignores it)"
            if hint:
                message += f"; did you mean {hint}=?"
        ctx.add("SD102", a.key.span(), message, path=a.path)
    return iter(())


@register(
    "SD103",
    "malformed-line",
    Severity.ERROR,
    doc="""
    A line systemd cannot read as a section header or a `Key=Value` assignment.

    What it does:
    Reports lines without `=`, assignments before the first section header and section
    headers without a closing `]`.

    Why is this bad?
    systemd skips such lines with a warning (src/shared/conf-parser.c `parse_line()`), so
    what they were meant to set is not set; a broken header also hides the whole section.

    Example:
    ```ini
    [Service
    ExecStart /opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """,
)
def check_parse_problems(ctx: UnitContext) -> Iterator[Finding]:
    for problem in ctx.unit.problems:
        ctx.add("SD103", problem.span, problem.message, path=problem.path)
    return iter(())


@register(
    "SD104",
    "invalid-value",
    Severity.ERROR,
    doc="""
    A value systemd cannot parse for a typed key (boolean, time span, enumeration).

    What it does:
    Validates the values of typed keys (`Restart=`, `Type=`, `KillMode=`, `TimeoutStartSec=`,
    booleans, integers…) with ports of systemd's own parsers for the target version.

    Why is this bad?
    systemd logs "Failed to parse …, ignoring" and keeps the default, so `TimeoutStartSec=30
    mins` silently leaves the 90 s default in force — too short for a model that loads for
    half an hour.

    Example:
    ```ini
    TimeoutStartSec=30 mins
    Restart=on-failur
    ```

    Use instead:
    ```ini
    TimeoutStartSec=30min
    Restart=on-failure
    ```
    """,
)
def check_values(ctx: UnitContext) -> Iterator[Finding]:
    catalog = _catalog(ctx)
    allowed = _allowed_sections(ctx)
    for a in ctx.unit.assignments:
        if allowed and a.section not in allowed:
            continue
        validator = VALIDATORS.get(catalog.parser(a.section, a.name) or "")
        if validator is None:
            continue
        problem = validator(a.value.text, ctx.version)
        if problem is None:
            continue
        span = a.value.span(problem.start, problem.end, fallback=a.key.span())
        consequence = ", so systemd ignores the setting" if problem.ignored else ""
        ctx.add(
            "SD104",
            span,
            f"{a.name}={a.value.text}: {problem.message}{consequence}",
            path=a.path,
            severity=None if problem.ignored else Severity.WARNING,
        )
    return iter(())


@register(
    "SD105",
    "multiple-exec-start",
    Severity.ERROR,
    doc="""
    More than one `ExecStart=` command in a service that is not `Type=oneshot`.

    What it does:
    Counts the commands in effect (after resets by an empty `ExecStart=`, drop-ins
    included) and reports a second one.

    Why is this bad?
    systemd refuses to load the unit: "Service has more than one ExecStart= setting, which
    is only allowed for Type=oneshot services. Refusing." A drop-in that wants to replace
    the command must first reset the list with an empty `ExecStart=`.

    Example:
    ```ini
    # vllm.service.d/override.conf
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8001
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port 8001
    ```
    """,
)
def check_multiple_exec_start(ctx: UnitContext) -> Iterator[Finding]:
    if ctx.unit.unit_type != "service":
        return iter(())
    if (ctx.unit.last_value("Service", "Type") or "simple") == "oneshot":
        return iter(())
    starts = [c for c in ctx.commands if c.key == "ExecStart"]
    for extra in starts[1:]:
        ctx.add(
            "SD105",
            extra.assignment.key.span(),
            "a second ExecStart= command: systemd refuses to load a service with more than "
            "one unless Type=oneshot (reset the list with an empty ExecStart= first)",
            path=extra.assignment.path,
        )
    return iter(())


_EXEC_PROBLEMS = {
    "unbalanced-quote": "SD108",
    "unknown-escape": "SD109",
    "unknown-specifier": "SD110",
    "relative-path": "SD106",
    "empty-path": "SD106",
    "unsafe-path": "SD106",
    "directory-path": "SD106",
    "empty-argv0": "SD106",
    "semicolon": "SD114",
}


def _consequence(fatal: bool, dropped: bool) -> str:
    if fatal:
        return 'systemd refuses to load the unit ("Unit configuration has fatal error")'
    if dropped:
        return "systemd ignores this command"
    return ""


@register(
    "SD106",
    "invalid-executable-path",
    Severity.ERROR,
    doc="""
    The command's executable is not an absolute path nor a plain file name.

    What it does:
    Checks the first word of each Exec command (after prefixes and specifiers): relative
    paths with a slash, paths ending in `/`, quotes or control characters in the path, and
    a missing argv[0] after the `@` prefix.

    Why is this bad?
    systemd logs "Neither a valid executable name nor an absolute path" and refuses to load
    the unit (with the `-` prefix it drops the command instead).

    Example:
    ```ini
    ExecStart=venv/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/venv/bin/vllm serve /models/m
    ```
    """,
)
def check_exec_problems(ctx: UnitContext) -> Iterator[Finding]:
    for _key, assignment, line in ctx.exec_lines:
        for problem in line.problems:
            code = _EXEC_PROBLEMS.get(problem.kind)
            if code is None:
                continue
            consequence = _consequence(
                problem.fatal,
                line.dropped
                and not problem.fatal
                and problem.kind not in ("unknown-escape", "semicolon"),
            )
            message = problem.message
            if problem.kind == "unknown-escape":
                seq = ctx.unit.text_at(assignment.path, problem.span) or "\\"
                message = (
                    f"unknown escape sequence `{seq}`: systemd keeps the backslash and the "
                    f"character as written (write `\\\\` for a backslash)"
                )
            elif problem.kind == "unknown-specifier":
                letter = problem.data.get("letter", "?")
                message = (
                    f"unknown specifier `%{letter}` for systemd {ctx.version} "
                    '("Invalid slot"); write `%%` for a literal percent sign'
                )
            if consequence:
                message = f"{message}: {consequence}"
            ctx.add(code, problem.span, message, path=assignment.path)
    return iter(())


@register(
    "SD107",
    "executable-not-absolute",
    Severity.WARNING,
    doc="""
    The executable is a bare name, looked up in systemd's fixed search path.

    What it does:
    Reports Exec commands whose executable is a plain file name such as `vllm` or `bash`:
    a warning for `vllm` and `python…` (usually installed in a virtualenv), information
    for other programs.

    Why is this bad?
    systemd does not use `$PATH` or the service's `Environment=PATH=` to find it: it
    searches a fixed list (/usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin). A `vllm`
    inside a virtualenv is not found, or a different one is.

    Example:
    ```ini
    ExecStart=vllm serve /models/m
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/venv/bin/vllm serve /models/m
    ```
    """,
)
def check_bare_executable(ctx: UnitContext) -> Iterator[Finding]:
    for cmd in ctx.commands:
        if cmd.command.path.startswith("/"):
            continue
        # Interpreters and vLLM usually live in a virtualenv that the fixed path misses;
        # system tools (systemctl, journalctl) are found there reliably.
        risky = cmd.command.path == "vllm" or cmd.command.path.startswith("python")
        first = cmd.command.words[0]
        span = cmd.assignment.value.span(first.start, first.end)
        ctx.add(
            "SD107",
            span,
            f"`{cmd.command.path}` is searched in systemd's fixed path "
            "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin), not $PATH; "
            "use an absolute path",
            path=cmd.assignment.path,
            severity=None if risky else Severity.INFO,
        )
    return iter(())


_DOC_TEMPLATE_EXEC = """
    {summary}

    What it does:
    {what}

    Why is this bad?
    {why}

    Example:
    ```ini
    {example}
    ```

    Use instead:
    ```ini
    {instead}
    ```
"""


def _declare(code: str, name: str, severity: Severity, **parts: str) -> None:
    """Rules whose findings come from the Exec-line model (check_exec_problems above)."""
    register(code, name, severity, doc=_DOC_TEMPLATE_EXEC.format(**parts))(lambda ctx: ())


_declare(
    "SD108",
    "unbalanced-quotes",
    Severity.ERROR,
    summary="A quote that is never closed in an Exec line.",
    what="Finds Exec words whose `'` or `\"` has no closing partner.",
    why=(
        'systemd logs "Unbalanced quoting, ignoring" and drops the command; in anything '
        "but the first word the unit fails to load (src/basic/extract-word.c)."
    ),
    example='ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config \'{"method": "ngram"}',
    instead='ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config \'{"method": "ngram"}\'',
)
_declare(
    "SD109",
    "unknown-escape",
    Severity.WARNING,
    summary="A backslash escape systemd does not know.",
    what="Finds `\\\\X` sequences in Exec lines that are not C escapes systemd understands.",
    why=(
        'systemd logs "Ignoring unknown escape sequences" and passes backslash and character '
        "verbatim; a regex like `\\\\d` works by accident, a Windows-style path does not."
    ),
    example="ExecStartPre=/bin/grep -q '\\d' /etc/vllm/ready",
    instead="ExecStartPre=/bin/grep -q '\\\\d' /etc/vllm/ready",
)
_declare(
    "SD110",
    "unknown-specifier",
    Severity.ERROR,
    summary="A `%` followed by a letter or digit that is not a specifier of this systemd.",
    what="Finds `%X` in Exec words where X is not a specifier of the target systemd version.",
    why=(
        'systemd fails to resolve it ("Invalid slot") and refuses to load the unit '
        "(src/shared/specifier.c)."
    ),
    example="ExecStartPre=/bin/bash -c 'printf \"%5.1f\\n\" 1'",
    instead="ExecStartPre=/bin/bash -c 'printf \"%%5.1f\\n\" 1'",
)
_declare(
    "SD114",
    "semicolon-separator",
    Severity.WARNING,
    summary="A lone `;` separating two commands in one Exec line.",
    what="Finds `;` used as a command separator in Exec lines (deprecated since systemd 257).",
    why=(
        "systemd.service(5) of v257 marks it deprecated (257.13 still accepts it silently); "
        "one command per `ExecStartPre=` line is clearer and survives future versions."
    ),
    example="ExecStartPre=/bin/true ; /bin/sleep 1",
    instead="ExecStartPre=/bin/true\n    ExecStartPre=/bin/sleep 1",
)


@register(
    "SD111",
    "deprecated-specifier",
    Severity.WARNING,
    doc="""
    A deprecated specifier (`%c`, `%r`, `%R`).

    What it does:
    Finds specifiers that systemd still resolves but logs as deprecated.

    Why is this bad?
    systemd logs "Specifier '%r' used in unit configuration, which is deprecated" and the
    value does not mean what it once did.

    Example:
    ```ini
    ExecStart=/bin/echo %r
    ```

    Use instead:
    ```ini
    ExecStart=/bin/echo /system.slice
    ```
    """,
)
def check_deprecated_specifiers(ctx: UnitContext) -> Iterator[Finding]:
    from linting.execline.specifiers import find_specifiers

    for _key, assignment, line in ctx.exec_lines:
        for command in line.commands:
            for word in command.words:
                for use in find_specifiers(word.value.text, ctx.version):
                    if use.deprecated:
                        ctx.add(
                            "SD111",
                            word.value.span(use.offset, use.offset + 2),
                            f"specifier `%{use.letter}` is deprecated in systemd {ctx.version}",
                            path=assignment.path,
                        )
    return iter(())


@register(
    "SD112",
    "missing-exec-start",
    Severity.ERROR,
    doc="""
    A service with no command to run.

    What it does:
    Reports `.service` units that have no `ExecStart=` (after resets), no `ExecStop=` and
    no `SuccessAction=`, including units whose only `ExecStart=` systemd drops.

    Why is this bad?
    systemd refuses to load it: "Service has no ExecStart=, ExecStop=, or SuccessAction=.
    Refusing."

    Example:
    ```ini
    [Service]
    ExecStart="/opt/vllm/bin/vllm serve /models/m
    ```

    Use instead:
    ```ini
    [Service]
    ExecStart=/opt/vllm/bin/vllm serve /models/m
    ```
    """,
)
def check_missing_exec_start(ctx: UnitContext) -> Iterator[Finding]:
    unit = ctx.unit
    if unit.unit_type != "service" or unit.is_dropin_only:
        return iter(())
    keys = {c.key for c in ctx.commands}
    if keys & {"ExecStart", "ExecStop"} or unit.last_value("Unit", "SuccessAction"):
        return iter(())
    anchor, path = unit.anchor("Service")
    ctx.add(
        "SD112",
        anchor,
        "no ExecStart= command systemd would run: it refuses to load the service "
        '("Service has no ExecStart=, ExecStop=, or SuccessAction=")',
        path=path,
    )
    return iter(())


@register(
    "SD113",
    "invalid-environment",
    Severity.ERROR,
    doc="""
    An `Environment=` word that is not a valid `NAME=VALUE` assignment.

    What it does:
    Splits `Environment=` values the way systemd does (quotes group words) and checks each
    assignment's name.

    Why is this bad?
    systemd logs "Invalid environment assignment, ignoring" and the variable is not set:
    `Environment=CUDA_VISIBLE_DEVICES = 0,1` sets nothing.

    Example:
    ```ini
    Environment=CUDA-VISIBLE-DEVICES=0,1,2,3
    ```

    Use instead:
    ```ini
    Environment=CUDA_VISIBLE_DEVICES=0,1,2,3
    ```
    """,
)
def check_environment(ctx: UnitContext) -> Iterator[Finding]:
    for problem in ctx.environment_problems:
        ctx.add("SD113", problem.span, problem.message, path=problem.path or None)
    return iter(())


@register(
    "SD115",
    "ignored-legacy-key",
    Severity.WARNING,
    doc="""
    A legacy key that systemd still accepts but ignores.

    What it does:
    Reports keys the target systemd lists as removed (e.g. `Capabilities=`, `NetClass=`).

    Why is this bad?
    systemd logs that the setting is unsupported and does nothing with it.

    Example:
    ```ini
    [Service]
    NetClass=1
    ```

    Use instead:
    ```ini
    [Service]
    # remove the line; see systemd.exec(5) for today's replacement
    ```
    """,
)
def check_removed_keys(ctx: UnitContext) -> Iterator[Finding]:
    catalog = _catalog(ctx)
    for a in ctx.unit.assignments:
        if catalog.is_removed(a.section, a.name):
            ctx.add(
                "SD115",
                a.key.span(),
                f"{a.name}= is no longer supported by systemd {ctx.version}; it is ignored",
                path=a.path,
            )
    return iter(())
