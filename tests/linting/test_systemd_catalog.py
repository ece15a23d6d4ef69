"""Tests for linting.systemd.catalog and the generated systemd catalogs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from linting.systemd.catalog import (
    DEFAULT_SYSTEMD_VERSION,
    SystemdCatalog,
    UnknownSystemdVersion,
    available_versions,
    load_catalog,
)

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_systemd_catalog", ROOT / "tools" / "gen_systemd_catalog.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_available_versions() -> None:
    assert available_versions() == (252, 255, 257)
    assert DEFAULT_SYSTEMD_VERSION == 252


@pytest.mark.parametrize("version", [252, 255, 257])
def test_exact_table(version: int) -> None:
    catalog = load_catalog(version)
    assert catalog.table_version == version
    assert catalog.parser("Service", "ExecStart") == "config_parse_exec"
    assert catalog.parser("Service", "Environment") == "config_parse_environ"
    assert catalog.parser("Service", "TimeoutStartSec") == "config_parse_service_timeout"
    assert catalog.parser("Unit", "After") == "config_parse_unit_deps"
    assert catalog.parser("Service", "NoSuchKey") is None
    assert catalog.parser("NoSuchSection", "ExecStart") is None


def test_fallback_to_highest_older_table() -> None:
    assert load_catalog(254).table_version == 252
    assert load_catalog(256).table_version == 255
    assert load_catalog(300).table_version == 257
    assert load_catalog(256).version == 256


def test_version_below_oldest_table_is_an_error() -> None:
    with pytest.raises(UnknownSystemdVersion):
        load_catalog(251)
    assert issubclass(UnknownSystemdVersion, ValueError)


def test_load_catalog_is_cached() -> None:
    assert load_catalog(255) is load_catalog(255)


def test_keys_differ_between_versions() -> None:
    # RestartMode= (254) and Install.UpheldBy= (254) are absent from 252.
    assert load_catalog(252).parser("Service", "RestartMode") is None
    assert load_catalog(255).parser("Service", "RestartMode") == "config_parse_service_restart_mode"
    assert load_catalog(252).parser("Install", "UpheldBy") is None
    assert load_catalog(257).parser("Install", "UpheldBy") == "config_parse_strv"
    # PrivatePIDs= is new in 257.
    assert load_catalog(255).parser("Service", "PrivatePIDs") is None
    assert load_catalog(257).parser("Service", "PrivatePIDs") is not None


def test_install_section_parsers_come_from_install_c() -> None:
    install = load_catalog(252).keys("Install")
    assert install == {
        "Alias": "config_parse_alias",
        "Also": "config_parse_also",
        "DefaultInstance": "config_parse_default_instance",
        "RequiredBy": "config_parse_strv",
        "WantedBy": "config_parse_strv",
    }


def test_sections_for_unit_type() -> None:
    catalog = load_catalog(252)
    assert catalog.sections_for_unit_type("service") == {"Unit", "Service", "Install"}
    assert catalog.sections_for_unit_type("vllm.socket") == {"Unit", "Socket", "Install"}
    assert catalog.sections_for_unit_type(".timer") == {"Unit", "Timer", "Install"}
    assert catalog.sections_for_unit_type("target") == {"Unit", "Target", "Install"}
    with pytest.raises(ValueError):
        catalog.sections_for_unit_type("servce")


def test_has_section() -> None:
    catalog = load_catalog(252)
    assert catalog.has_section("Service")
    assert catalog.has_section("Install")
    assert catalog.has_section("Target")  # valid, though it has no keys
    assert not catalog.has_section("service")  # section names are case-sensitive
    assert not catalog.has_section("Sevrice")


def test_suggest() -> None:
    keys = load_catalog(252).keys("Service")
    assert SystemdCatalog.suggest("Enviroment", keys) == "Environment"
    assert SystemdCatalog.suggest("execstart", keys) == "ExecStart"
    assert SystemdCatalog.suggest("TimeoutStartSecs", keys) == "TimeoutStartSec"
    assert SystemdCatalog.suggest("CompletelyUnrelated", keys) is None
    assert SystemdCatalog.suggest("Sevrice", ["Unit", "Service", "Install"]) == "Service"


def test_removed_keys_are_known_but_flagged() -> None:
    catalog = load_catalog(252)
    assert catalog.parser("Service", "Capabilities") == "config_parse_warn_compat"
    assert catalog.is_removed("Service", "Capabilities")
    assert not catalog.is_removed("Service", "ExecStart")


def test_value_types_from_dump() -> None:
    catalog = load_catalog(252)
    assert catalog.value_type("Service", "RemainAfterExit") == "BOOLEAN"
    assert catalog.value_type("Service", "ExecStart") == "PATH [ARGUMENT [...]]"


@pytest.mark.parametrize("version", [252, 255, 257])
def test_committed_catalog_matches_generator(version: int) -> None:
    """The JSON must be exactly what the generator builds from the committed sources."""
    built = _generator().build_catalog(version)
    committed = json.loads(
        (ROOT / "linting" / "systemd" / "catalogs" / f"systemd-{version}.json").read_text()
    )
    assert built == committed
    # gperf (source) and --dump-configuration-items (binary) agree key for key.
    assert committed["crosscheck"] == {"only_in_gperf": [], "only_in_dump": []}


def test_gperf_template_expansion() -> None:
    gen = _generator()
    template = (
        "{# c #}\n"
        "{%- macro KILL_CONTEXT_CONFIG_ITEMS(type) -%}\n"
        "{{type}}.KillMode, config_parse_kill_mode, 0, offsetof({{type}}, kill_context)\n"
        "{% if HAVE_SECCOMP %}\n"
        "{{type}}.Sys, config_parse_syscall_filter, 0, 0\n"
        "{% else %}\n"
        "{{type}}.Sys, config_parse_warn_compat, DISABLED_CONFIGURATION, 0\n"
        "{% endif %}\n"
        "{%- endmacro -%}\n"
        "%%\n"
        "Unit.Description, config_parse_unit_string_printf, 0, 0\n"
        "{{ KILL_CONTEXT_CONFIG_ITEMS('Service') }}\n"
        "{{ KILL_CONTEXT_CONFIG_ITEMS('Socket') }}\n"
    )
    with_seccomp = gen.parse_gperf(template, {"HAVE_SECCOMP": True})
    assert with_seccomp["Service"]["KillMode"]["parser"] == "config_parse_kill_mode"
    assert with_seccomp["Socket"]["Sys"]["parser"] == "config_parse_syscall_filter"
    assert with_seccomp["Unit"]["Description"]["parser"] == "config_parse_unit_string_printf"
    without = gen.parse_gperf(template, {"HAVE_SECCOMP": False})
    assert without["Service"]["Sys"]["parser"] == "config_parse_warn_compat"
