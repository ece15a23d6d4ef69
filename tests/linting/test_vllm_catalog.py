"""Tests of the vLLM catalog loader and of facts read from the generated data.

The facts asserted here were checked against the wheel sources (see the
`source` fields in the JSON); a regenerated catalog that disagrees means the
generator or vLLM changed, and must be looked at, not silently accepted.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import re
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from linting.vllm import catalog as catalog_module
from linting.vllm.catalog import (
    CATALOG_DIR,
    DEFAULT_VLLM_VERSION,
    FlagSpec,
    UnknownVllmVersion,
    VllmCatalog,
    available_versions,
    load_catalog,
)

VERSIONS = ["0.8.5", "0.11.0", "0.16.0", "0.33.0"]
REPO = Path(__file__).resolve().parents[2]
SEED_FLAGS = [
    "--speculative-config",
    "--tensor-parallel-size",
    "--enable-expert-parallel",
    "--trust-remote-code",
    "--served-model-name",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    "--quantization",
    "--max-num-seqs",
    "--host",
    "--port",
]
LEGACY = [
    "--speculative-model",
    "--num-speculative-tokens",
    "--ngram-prompt-lookup-max",
    "--ngram-prompt-lookup-min",
]


def _generator() -> ModuleType:
    path = REPO / "tools" / "gen_vllm_catalog.py"
    spec = importlib.util.spec_from_file_location("gen_vllm_catalog", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=VERSIONS)
def catalog(request: pytest.FixtureRequest) -> VllmCatalog:
    return load_catalog(request.param)


# -- loader -----------------------------------------------------------------


def test_available_versions_sorted_numerically() -> None:
    versions = available_versions()
    keys = [tuple(int(p.removeprefix("post")) for p in v.split(".")) for v in versions]
    assert keys == sorted(keys) and versions.index("0.9.0") < versions.index("0.11.0")
    assert set(VERSIONS) <= set(versions)  # string sort would put 0.11 first
    assert DEFAULT_VLLM_VERSION == "0.34.0"


def test_unknown_version_lists_available() -> None:
    with pytest.raises(UnknownVllmVersion, match=r"0\.8\.5, 0\.9\.0, 0\.9\.1"):
        load_catalog("0.9.9")
    assert issubclass(UnknownVllmVersion, ValueError)
    with pytest.raises(UnknownVllmVersion):
        load_catalog("../../etc/passwd")


def test_load_is_cached_and_frozen() -> None:
    c = load_catalog("0.16.0")
    assert load_catalog("0.16.0") is c
    with pytest.raises(AttributeError):
        c.version = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.speculative_config.fields["bogus"] = None  # type: ignore[index]


def test_remembered_flag_answers_stay_right_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve_flag remembers its answers per catalog; a web worker that lints for weeks
    must not grow that memory without end, and a word asked again gets the same answer."""
    monkeypatch.setattr(catalog_module, "_RESOLVED_LIMIT", 50)
    c = load_catalog("0.16.0")
    first = c.resolve_flag("--tensor-parallel-size=2")
    assert first is not None and first.name == "--tensor-parallel-size" and first.value == "2"
    for n in range(200):
        assert c.resolve_flag(f"--no-such-flag-{n}") is None
        assert len(c._resolved) <= 50
    assert c.resolve_flag("--tensor-parallel-size=2") == first
    assert c.resolve_flag("--tensor_parallel_size").spelling == "normalised"  # type: ignore[union-attr]


# -- generated data, every version --------------------------------------------


def test_files_are_deterministic_json() -> None:
    for version in available_versions():
        text = (CATALOG_DIR / f"vllm-{version}.json").read_text(encoding="utf-8")
        data = json.loads(text)
        assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        assert data["generated_by"] == "tools/gen_vllm_catalog.py"
        assert data["vllm_version"] == version
        archive = data["archive"]
        assert archive in (f"vllm-{version}.tar.gz",) or (
            archive.startswith(f"vllm-{version}-") and archive.endswith(".whl")
        )
        assert re.fullmatch(r"[0-9a-f]{64}", data["archive_sha256"])
        names = [f["names"][0] for f in data["flags"]]
        assert names == sorted(names)


def test_catalog_sanity(catalog: VllmCatalog) -> None:
    assert len(catalog.flags) > 100
    assert catalog.positionals == ("model_tag",)
    seen: set[str] = set()
    for spec in catalog.flags:
        assert spec.kind in {"value", "store_true", "store_false", "boolean_optional"}
        assert spec.type in {"int", "float", "str", "json", "human_int", "bool", None}
        assert (spec.type is None) == (spec.kind != "value"), spec
        assert re.fullmatch(r"vllm/[\w/]+\.py:\d+", spec.source), spec.source
        assert not (seen & set(spec.names)), spec.names
        seen.update(spec.names)
    assert len(catalog.speculative_config.fields) > 10


def test_common_flags(catalog: VllmCatalog) -> None:
    tp = catalog.flag("-tp")
    assert tp is not None and tp.canonical == "--tensor-parallel-size" and tp.type == "int"
    assert catalog.flag("--max-model-len").type == "human_int"  # accepts "32k"
    assert catalog.flag("--gpu-memory-utilization").type == "float"
    assert catalog.flag("--speculative-config").type == "json"
    assert "fp8" in catalog.flag("--kv-cache-dtype").choices
    assert catalog.flag("--port").type == "int"
    assert catalog.flag("--served-model-name").nargs == "+"


def test_legacy_spec_flags_removed(catalog: VllmCatalog) -> None:
    assert list(catalog.removed_flags) == LEGACY
    for name in LEGACY:
        # no unique-prefix match either: --speculative-model is not a prefix
        assert catalog.flag(name) is None


# -- per-version facts ------------------------------------------------------


def test_seed_deployment_flags_present_in_0_16() -> None:
    c = load_catalog("0.16.0")
    missing = [f for f in SEED_FLAGS if c.flag(f) is None]
    assert missing == []
    assert c.flag("--enable-expert-parallel").kind == "boolean_optional"
    assert c.flag("--trust-remote-code").kind == "boolean_optional"
    assert c.flag("--max-model-len").also_accepts == ("-1", "auto")


def test_quantization_choices() -> None:
    # 0.8.5: argparse choices=[*QUANTIZATION_METHODS, None] (arg_utils.py:600)
    old = load_catalog("0.8.5").flag("--quantization")
    assert old.choices is not None and "fp8" in old.choices and "awq" in old.choices
    # 0.16: QuantizationMethods is `Any` at runtime (config/model.py:71) so
    # argparse takes any string; ModelConfig checks the list at engine start.
    new = load_catalog("0.16.0")
    assert new.flag("-q").choices is None
    assert {"fp8", "awq", "gptq"} <= set(new.runtime_choices["quantization"])


def test_boolean_spellings() -> None:
    assert load_catalog("0.8.5").flag("--trust-remote-code").kind == "store_true"
    assert load_catalog("0.8.5").flag("--no-trust-remote-code") is None
    c16 = load_catalog("0.16.0")
    spec = c16.flag("--no-enable-prefix-caching")
    assert spec is not None and spec.is_negative("--no-enable-prefix-caching")
    assert c16.flag("--disable-prefix-caching") is None
    # 0.33 EnableDisableAction pairs --enable-x with --disable-x
    c33 = load_catalog("0.33.0")
    spec = c33.flag("--disable-prefix-caching")
    assert spec is not None and spec.dest == "enable_prefix_caching"
    assert spec.is_negative("--disable-prefix-caching")
    assert not spec.is_negative("--enable-prefix-caching")


def test_spec_shorthand_flags() -> None:
    c33 = load_catalog("0.33.0")
    assert dict(c33.speculative_config.shorthand_flags) == {
        "--spec-method": "method",
        "--spec-model": "model",
        "--spec-tokens": "num_speculative_tokens",
    }
    assert c33.flag("-sc").canonical == "--speculative-config"
    assert c33.speculative_config.dash_keys_normalised
    for v in ("0.8.5", "0.11.0", "0.16.0"):
        c = load_catalog(v)
        assert dict(c.speculative_config.shorthand_flags) == {}
        assert c.flag("--spec-method") is None


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.8.5", "type_error"),
        ("0.11.0", "ignored"),
        ("0.16.0", "validation_error"),
        ("0.33.0", "validation_error"),
    ],
)
def test_unknown_speculative_keys(version: str, expected: str) -> None:
    assert load_catalog(version).speculative_config.unknown_keys == expected


def test_speculative_methods() -> None:
    s085 = load_catalog("0.8.5").speculative_config
    assert set(s085.methods_declared) == {
        "ngram",
        "eagle",
        "medusa",
        "mlp_speculator",
        "draft_model",
    }
    assert "eagle3" in s085.methods_accepted  # plain dataclass: Literal not enforced

    s011 = load_catalog("0.11.0").speculative_config
    assert {"eagle3", "mtp", "deepseek_mtp"} <= set(s011.methods_accepted)
    assert "suffix" not in s011.methods_accepted

    s016 = load_catalog("0.16.0").speculative_config
    assert {"suffix", "medusa", "mlp_speculator", "eagle3", "mtp"} <= set(s016.methods_accepted)

    s033 = load_catalog("0.33.0").speculative_config
    core = {"ngram", "draft_model", "suffix", "custom_class", "eagle", "eagle3"}
    core |= {"extract_hidden_states", "dflash", "ngram_gpu", "dspark", "mtp"}
    assert {m for m in s033.methods_accepted if not m.endswith("_mtp")} == core
    assert any(m.endswith("_mtp") for m in s033.methods_accepted)
    assert not {"medusa", "mlp_speculator"} & set(s033.methods_accepted)


def test_speculative_fields() -> None:
    fields = load_catalog("0.16.0").speculative_config.fields
    assert fields["num_speculative_tokens"].type == "int"
    assert fields["prompt_lookup_min"].nullable
    assert "target_model_config" not in fields  # injected by create_speculative_config
    assert "draft_tensor_parallel_size" in fields


# -- spelling rules ---------------------------------------------------------


def test_underscore_and_equals() -> None:
    c = load_catalog("0.16.0")
    m = c.resolve_flag("--tensor_parallel_size=2")
    assert m is not None and m.name == "--tensor-parallel-size"
    assert (m.spelling, m.value) == ("normalised", "2")
    assert c.resolve_flag("-tp=2").value == "2"
    assert c.resolve_flag("-qfp8").value == "fp8"  # argparse short option + value


def test_abbreviations() -> None:
    c = load_catalog("0.16.0")
    m = c.resolve_flag("--tensor-parallel")
    assert m is not None and m.spelling == "abbreviation"
    assert c.flag("--disable-log") is None  # ambiguous: -stats / -requests
    assert c.flag("--definitely-not-a-flag") is None


def test_dotted_json_keys() -> None:
    m = load_catalog("0.16.0").resolve_flag("--speculative_config.num_speculative_tokens")
    assert m is not None and m.spec.dest == "speculative_config"
    assert m.json_path == ("num_speculative_tokens",)  # `_` kept after the dot
    assert load_catalog("0.8.5").flag("--speculative-config.method") is None


def test_dash_o() -> None:
    assert load_catalog("0.16.0").resolve_flag("-O3").name == "--optimization-level"
    m11 = load_catalog("0.11.0").resolve_flag("-O3")
    assert (m11.name, m11.json_path, m11.value) == ("-O", ("level",), "3")
    m085 = load_catalog("0.8.5").resolve_flag("-O3")
    assert (m085.spec.dest, m085.spelling) == ("compilation_config", "short_concat")


def test_suggest_flag() -> None:
    c = load_catalog("0.16.0")
    assert c.suggest_flag("--tensor-paralel-size") == "--tensor-parallel-size"
    assert c.suggest_flag("--gpu_memory_utilisation") == "--gpu-memory-utilization"
    assert c.suggest_flag("--zzzzzzzzzzzz") is None


def test_flagspec_is_negative_only_for_booleans() -> None:
    spec = FlagSpec(("--x",), "x", "value", "int", None, None, False, "vllm/a.py:1")
    assert not spec.is_negative("--x")


# -- generator ----------------------------------------------------------------


def _fake_wheel(files: dict[str, str]) -> zipfile.ZipFile:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return zipfile.ZipFile(io.BytesIO(buf.getvalue()))


def test_generator_type_evaluation() -> None:
    gen = _generator()
    zf = _fake_wheel(
        {
            "vllm/__init__.py": "",
            "vllm/quant.py": 'from typing import Literal\nQ = Literal["a", "b"]\n',
            "vllm/config.py": (
                "from typing import TYPE_CHECKING, Any, Literal, Optional\n"
                "if TYPE_CHECKING:\n    from vllm.quant import Q\nelse:\n    Q = Any\n"
                'M = Literal["x", Literal["y"]]\n'
                "from vllm.quant import Q as RealQ\n"
            ),
        }
    )
    index = gen.ModuleIndex(zf)
    types = gen.TypeEvaluator(index)

    # runtime semantics: TYPE_CHECKING is False, so Q is Any
    assert types.eval(ast.parse("Q", mode="eval").body, "vllm.config").kind == "any"
    lit = types.eval(ast.parse("Optional[M]", mode="eval").body, "vllm.config")
    assert lit.kind == "union" and lit.args[0].args == ("x", "y")
    real = types.eval(ast.parse("RealQ | None", mode="eval").body, "vllm.config")
    assert real.args[0].args == ("a", "b")


CACHES = [
    Path(os.environ.get("VLLM_WHEEL_CACHE", "/var/tmp/vllm-wheels")),
    Path("/var/tmp/vllm-sdists"),
]


@pytest.mark.parametrize("version", VERSIONS)
def test_committed_catalog_matches_generator(version: str) -> None:
    """The generator, run on the archive a catalog names, gives that catalog back (needs
    the sdist or wheel cached: `tools/gen_vllm_catalog.py VERSION` downloads it)."""
    committed = json.loads((CATALOG_DIR / f"vllm-{version}.json").read_text(encoding="utf-8"))
    archives = [c / committed["archive"] for c in CACHES if (c / committed["archive"]).is_file()]
    if not archives:
        pytest.skip(f"{committed['archive']} is not cached")
    fresh = json.loads(json.dumps(_generator().build_catalog(version, archives[0]), sort_keys=True))
    if fresh["image_entrypoint"] is None:  # a wheel: the release before it stood in
        fresh["image_entrypoint"] = committed["image_entrypoint"]
    assert fresh == committed
