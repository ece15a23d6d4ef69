"""VL332: two vLLM units of one machine share a GPU and ask for more than its memory."""

from __future__ import annotations

from linting.engine import lint_units
from linting.findings import Finding, Severity
from linting.options import LintOptions
from linting.unitfile import parse_text

VLLM = "/opt/vllm/bin/vllm serve"


def unit(args: str, gpus: str | None = None) -> str:
    env = f"Environment=CUDA_VISIBLE_DEVICES={gpus}\n" if gpus is not None else ""
    return f"[Service]\n{env}ExecStart={VLLM} {args}\n"


def lint_two(
    a: str, b: str, same_host: tuple[tuple[str, ...], ...] = (("a.service", "b.service"),)
) -> dict[str, list]:
    units = [
        parse_text(a, "/etc/systemd/system/a.service"),
        parse_text(b, "/etc/systemd/system/b.service"),
    ]
    options = LintOptions(
        vllm_version="0.16.0", shellcheck=False, select=("VL332",), same_host=same_host
    )
    return {fr.path.rsplit("/", 1)[-1]: fr.findings for fr in lint_units(units, options).files}


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [(f.code, f.message) for f in findings]
    return findings[0]


def test_two_units_on_every_gpu_at_the_default_fraction_are_reported_once() -> None:
    found = lint_two(unit("/models/a --port 8001"), unit("/models/b --port 8002"))
    fa = only(found["a.service"])
    assert found["b.service"] == []
    assert fa.severity == Severity.WARNING
    assert "every GPU" in fa.message and "b.service" in fa.message
    assert "1.8" in fa.message


def _lint_many(texts: dict[str, str], same_host: tuple[tuple[str, ...], ...] = ()) -> list:
    units = [parse_text(text, f"/srv/{name}") for name, text in texts.items()]
    options = LintOptions(
        vllm_version="0.16.0", shellcheck=False, select=("VL332",), same_host=same_host
    )
    return [f for fr in lint_units(units, options).files for f in fr.findings]


def test_three_units_that_fit_in_pairs_but_not_together_are_reported_once_naming_all() -> None:
    texts = {
        f"{n}.service": unit(f"/models/{n} --port 800{i} --gpu-memory-utilization 0.4", "0")
        for i, n in enumerate("abc")
    }
    [finding] = _lint_many(texts, same_host=(tuple(texts),))
    assert finding.path == "/srv/a.service"
    assert "GPU 0 also used by b.service (line 3) and c.service (line 3)" in finding.message
    assert "1.2 of the GPU" in finding.message
    assert finding.data["other_units"] == ["/srv/b.service", "/srv/c.service"]


def test_units_tied_by_wants_or_part_of_share_a_machine_without_same_host() -> None:
    a = "[Unit]\nWants=b.service\n" + unit("/models/a --port 8001 --gpu-memory-utilization 0.6")
    b = "[Unit]\nPartOf=c.service\n" + unit("/models/b --port 8002 --gpu-memory-utilization 0.3")
    c = unit("/models/c --port 8003 --gpu-memory-utilization 0.3")
    [finding] = _lint_many({"a.service": a, "b.service": b, "c.service": c})
    assert "every GPU also used by b.service (line 4) and c.service (line 2)" in finding.message
    untied = a.replace("Wants=b.service", "Wants=network-online.target")
    assert _lint_many({"a.service": untied, "b.service": b, "c.service": c}) == []


def test_overlapping_device_lists_name_the_shared_gpus() -> None:
    a = unit("/models/a --port 8001 --gpu-memory-utilization 0.6", gpus="0,1")
    b = unit("/models/b --port 8002 --gpu-memory-utilization 0.5", gpus="1,2")
    f = only(lint_two(a, b)["a.service"])
    assert "GPU 1 " in f.message and "0.5" in f.message
    line, column = f.span.start.line, f.span.start.column
    assert a.splitlines()[line - 1][column - 1 :].startswith("0.6")


def test_a_unit_on_every_gpu_shares_the_listed_gpus_of_the_other() -> None:
    found = lint_two(unit("/models/a --port 8001"), unit("/models/b --port 8002", gpus="3"))
    assert "GPU 3 " in only(found["a.service"]).message


def test_gpus_are_compared_as_cuda_reads_the_lists() -> None:
    """`01` and `1a` are GPU 1 to CUDA; `0,a,1` ends at `a` (docs/architecture.md,
    "Operations")."""
    found = lint_two(unit("/models/a --port 8001", gpus="01"), unit("/models/b", gpus="1a,2"))
    assert "GPU 1 " in only(found["a.service"]).message
    apart = lint_two(unit("/models/a --port 8001", gpus="0,a,1"), unit("/models/b", gpus="1"))
    assert apart == {"a.service": [], "b.service": []}


def test_disjoint_gpus_or_fractions_that_fit_are_fine() -> None:
    disjoint = lint_two(unit("/models/a", gpus="0,1"), unit("/models/b", gpus="2,3"))
    assert disjoint == {"a.service": [], "b.service": []}
    a = unit("/models/a --port 8001 --gpu-memory-utilization 0.45")
    b = unit("/models/b --port 8002 --gpu-memory-utilization 0.5")
    assert lint_two(a, b) == {"a.service": [], "b.service": []}


def test_only_units_named_together_by_same_host_are_one_machine_not_a_directory() -> None:
    a, b = unit("/models/a"), unit("/models/b")
    assert lint_two(a, b, same_host=()) == {"a.service": [], "b.service": []}
    apart = (("a.service",), ("b.service",))
    assert lint_two(a, b, same_host=apart) == {"a.service": [], "b.service": []}


def test_units_whose_devices_cannot_be_read_are_left_out() -> None:
    a = unit("/models/a")
    from_variable = unit("/models/b", gpus="${GPUS}")
    assert lint_two(a, from_variable) == {"a.service": [], "b.service": []}
    uuid = unit("/models/b", gpus="GPU-8f0c2b1e")
    assert lint_two(unit("/models/a", gpus="0"), uuid) == {"a.service": [], "b.service": []}
