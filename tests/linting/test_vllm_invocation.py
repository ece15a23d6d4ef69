"""The vLLM argument model: how argv words become options, values and problems."""

from __future__ import annotations

import pytest

from linting.context import UnitContext
from linting.options import LintOptions
from linting.spans import Pos, Traced
from linting.unitfile import parse_text
from linting.vllm.catalog import load_catalog
from linting.vllm.invocation import (
    VllmArgs,
    json_object_entries,
    parse_human_int,
    parse_vllm_command,
    point,
)


def parse(exec_start: str, version: str = "0.16.0") -> VllmArgs:
    unit = parse_text(f"[Service]\nExecStart={exec_start}\n", "x.service")
    ctx = UnitContext(unit, LintOptions(vllm_version=version))
    args = parse_vllm_command([a.value for a in ctx.commands[0].args], load_catalog(version))
    assert args is not None
    return args


def kinds(args: VllmArgs) -> list[str]:
    return [p.kind for p in args.problems]


def test_not_a_vllm_command_gives_none() -> None:
    argv = [Traced("/bin/true", tuple(Pos(1, i + 1) for i in range(9)))]
    assert parse_vllm_command(argv, load_catalog("0.16.0")) is None


def test_positional_model_and_separate_value() -> None:
    args = parse("/opt/vllm/bin/vllm serve /models/m --tensor-parallel-size 2")
    assert args.model is not None and args.model.text == "/models/m"
    assert args.model_source == "positional"
    option = args.last("tensor_parallel_size")
    assert option is not None and option.value is not None
    assert option.value.text == "2"
    # the value's position is the file position of `2` (column of the word after ExecStart=)
    line = "ExecStart=/opt/vllm/bin/vllm serve /models/m --tensor-parallel-size 2"
    assert option.value.span().start == Pos(2, line.index(" 2") + 2)
    assert args.problems == []


def test_inline_value_is_a_slice_of_the_option_word() -> None:
    args = parse("/opt/vllm/bin/vllm serve /m --gpu_memory_utilization=0.85")
    option = args.last("gpu_memory_utilization")
    assert option is not None and option.inline
    assert option.value is not None and option.value.text == "0.85"
    assert option.key.text == "--gpu_memory_utilization"
    assert option.match.spelling == "normalised"
    line = "ExecStart=/opt/vllm/bin/vllm serve /m --gpu_memory_utilization=0.85"
    assert option.value.span().start.column == line.index("0.85") + 1


def test_api_server_takes_model_from_option() -> None:
    args = parse(
        "/opt/venv/bin/python3 -m vllm.entrypoints.openai.api_server --model /models/m --port 8001"
    )
    assert args.model is not None and args.model.text == "/models/m"
    assert args.model_source == "--model"
    assert args.int_value("port") == 8001


def test_serve_dash_dash_model_refused_on_0_11_but_moved_on_0_16() -> None:
    old = parse("/opt/vllm/bin/vllm serve --model /models/m", "0.11.0")
    assert kinds(old) == ["model_option"]
    new = parse("/opt/vllm/bin/vllm serve --model /models/m", "0.16.0")
    assert kinds(new) == []
    assert new.model is not None and new.model.text == "/models/m"


def test_serve_model_equals_form_slips_through_on_0_11() -> None:
    args = parse("/opt/vllm/bin/vllm serve --model=/models/m", "0.11.0")
    assert kinds(args) == []
    assert args.model is not None and args.model.text == "/models/m"


def test_nargs_plus_takes_words_until_next_option() -> None:
    args = parse("/opt/vllm/bin/vllm serve /m --served-model-name a b --port 8001")
    option = args.last("served_model_name")
    assert option is not None
    assert [v.text for v in option.values] == ["a", "b"]


def test_negative_number_is_a_value() -> None:
    args = parse("/opt/vllm/bin/vllm serve /m --max-model-len -1")
    assert kinds(args) == []


@pytest.mark.parametrize(
    ("exec_tail", "kind"),
    [
        ("--port", "missing_value"),
        ("--port --host 0.0.0.0", "missing_value"),
        ("--max-num-seqs many", "wrong_type"),
        ("--gpu-memory-utilization high", "wrong_type"),
        ("--max-model-len 32q", "wrong_type"),
        ("--dtype bf16", "invalid_choice"),
        ("--quantization fp9", "runtime_choice"),
        ("--tensor-paralel-size 2", "unknown_flag"),
        ("--enforce-eager=1", "unexpected_value"),
        ("--speculative-model /models/d", "removed_flag"),
        ("/models/other", "extra_positional"),
    ],
)
def test_problem_kinds(exec_tail: str, kind: str) -> None:
    args = parse(f"/opt/vllm/bin/vllm serve /m {exec_tail}")
    assert kind in kinds(args)


def test_unique_prefix_is_accepted_as_argparse_does() -> None:
    args = parse("/opt/vllm/bin/vllm serve /m --tensor 2")
    assert kinds(args) == []
    assert args.int_value("tensor_parallel_size") == 2


def test_ambiguous_abbreviation() -> None:
    args = parse("/opt/vllm/bin/vllm serve /m --max 4")
    assert kinds(args) == ["ambiguous_flag"]
    assert "--max-model-len" in args.problems[0].data["candidates"]


def test_human_readable_int_per_version() -> None:
    assert parse_human_int("32k", "0.16.0") == 32000
    assert parse_human_int("32K", "0.16.0") == 32768
    assert parse_human_int("25.6k", "0.16.0") == 25600
    assert parse_human_int("1t", "0.16.0") == 10**12
    with pytest.raises(ValueError):
        parse_human_int("1t", "0.11.0")  # no tera multiplier before 0.16
    with pytest.raises(ValueError):
        parse_human_int("1.5K", "0.16.0")  # decimals not allowed with binary suffixes


def test_max_model_len_auto_only_where_accepted() -> None:
    assert kinds(parse("/opt/vllm/bin/vllm serve /m --max-model-len auto", "0.16.0")) == []
    assert kinds(parse("/opt/vllm/bin/vllm serve /m --max-model-len auto", "0.11.0")) == [
        "wrong_type"
    ]


def test_json_entries_know_their_positions() -> None:
    text = '{"method": "ngram",  "num_speculative_tokens": 5}'
    traced = Traced(text, tuple(Pos(1, i + 1) for i in range(len(text))))
    entries = json_object_entries(traced)
    assert [(e.key, e.value) for e in entries] == [
        ("method", "ngram"),
        ("num_speculative_tokens", 5),
    ]
    assert entries[1].key_text.text == '"num_speculative_tokens"'
    assert entries[1].value_text.span().start.column == text.index("5") + 1


def test_dotted_keys_are_one_source_after_the_json() -> None:
    args = parse(
        '/opt/vllm/bin/vllm serve /m --speculative-config \'{"method": "ngram"}\' '
        "--speculative-config.num_speculative_tokens 5"
    )
    sources = args.speculative_sources
    assert [s.kind for s in sources] == ["json", "dotted"]
    assert sources[-1].as_dict == {"num_speculative_tokens": 5}


@pytest.mark.parametrize(("version", "value"), [("0.33.0", 2000), ("0.16.0", "2k")])
def test_dotted_value_goes_through_human_readable_int_from_0_33(version, value) -> None:
    args = parse("/opt/vllm/bin/vllm serve /m --speculative-config.max_model_len 2k", version)
    assert args.speculative_sources[-1].as_dict == {"max_model_len": value}


def test_point_past_the_end_is_just_after_last_char() -> None:
    traced = Traced("ab", (Pos(3, 5), Pos(3, 6)))
    assert point(traced, 2).start == Pos(3, 7)
    assert point(traced, 1).start == Pos(3, 6)
