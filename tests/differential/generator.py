"""Generate Exec lines from a grammar of the trap pieces (hypothesis, derandomized).

Why committed output: hypothesis' derandomized stream can change between its versions, and CI
must replay the exact corpus that was proven; `generated_corpus.json` is the corpus, this
module only (re)creates it:

    .venv/bin/python -m tests.differential.generator          # rewrite the file
    .venv/bin/python -m tests.differential.generator --check  # exit 1 if it would change
"""

from __future__ import annotations

import json
import sys

import hypothesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.differential.corpus import ENV_RICH, GENERATED, TOKEN

COUNT = 260

PLAIN = ["a", "x1", "word", "-f", "--opt=1", "é", "/p/q", "=", ",", "#", "*", "~", "{", "}", "&"]
ESCAPES = [
    "\\n",
    "\\t",
    "\\\\",
    "\\s",
    "\\x41",
    "\\xff",
    "\\101",
    "\\u00e9",
    "\\q",
    '\\"',
    "\\'",
    "\\x00",
    "\\;",
]
DOLLARS = [
    "$$",
    "$A",
    "$B",
    "$SP",
    "$UNSET",
    "${A}",
    "${B}",
    "${SP}",
    "${Q}",
    "${UNSET}",
    "${EMPTY}",
    "${A:-d}",
    "${UNSET:-d}",
    "${#A}",
    "$1",
    "${1}",
    "$",
    "${",
    "$(x",
    "${bad-name}",
    "$V",
    "${V}",
]
PERCENTS = ["%%", "%n", "%p", "%i", "%H", "%m", "%b", "%v", "%o", "%w", "%u", "%t", "%s", "%"]
PREFIXES = ["", "", "", "", "-", ":", "@", "+", "!", "-:", ":@", "-@"]


def _piece(inside: str) -> st.SearchStrategy[str]:
    """One piece of a word; `inside` is the quote we are in ("" outside quotes)."""
    options = PLAIN + ESCAPES + DOLLARS + PERCENTS
    if inside:
        other = "'" if inside == '"' else '"'
        options += [" ", "  ", other, ";", "\t"] * 2
    return st.sampled_from(options)


@st.composite
def _quoted(draw: st.DrawFn) -> str:
    quote = draw(st.sampled_from(['"', "'"]))
    body = "".join(draw(st.lists(_piece(quote), max_size=4)))
    closing = draw(st.sampled_from([quote] * 12 + [""]))  # now and then unbalanced
    return quote + body + closing


@st.composite
def _word(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.sampled_from(["$A", "$B", "$SP", "$Q", "$UNSET", "$V", "$EMPTY", "$1"]))
    if kind == 1:  # a lone `;` starts a new command: make it one that runs the dumper
        return draw(st.sampled_from(["; " + TOKEN, "\\;", '";"']))
    parts = draw(st.lists(st.one_of(_piece(""), _quoted()), min_size=1, max_size=3))
    word = "".join(parts)
    return word if word.strip() else "a"


@st.composite
def _command(draw: st.DrawFn) -> str:
    prefix = draw(st.sampled_from(PREFIXES))
    words = [prefix + TOKEN]
    if "@" in prefix:
        words.append(draw(_word()))
    words += draw(st.lists(_word(), max_size=5))
    out = words[0]
    for w in words[1:]:
        sep = draw(st.sampled_from([" "] * 8 + ["\t", "  ", " \\\n  "]))
        out += sep + w
    return out


@st.composite
def _exec_value(draw: st.DrawFn) -> str:
    commands = draw(st.lists(_command(), min_size=1, max_size=3))
    return " ; ".join(commands)


@st.composite
def _env_line(draw: st.DrawFn) -> str:
    extra = st.sampled_from(["x", "y z", "'q'"])
    pieces = draw(st.lists(st.one_of(_piece('"'), extra), max_size=4))
    value = "".join(pieces).replace('"', '\\"')
    return f'"V={value}"'


@st.composite
def _case(draw: st.DrawFn) -> dict[str, object]:
    env: list[str] = []
    if draw(st.booleans()):
        env += draw(st.lists(st.sampled_from(ENV_RICH), unique=True, max_size=4))
    if draw(st.booleans()):
        env.append(draw(_env_line()))
    execs = draw(st.lists(_exec_value(), min_size=1, max_size=2))
    # now and then an unknown specifier: a load failure
    if draw(st.sampled_from([False] * 9 + [True])):
        execs[-1] += " %k"
    return {"env": env, "execs": execs}


def generate(count: int = COUNT) -> list[dict[str, object]]:
    """`count` distinct cases, the same on every run of one hypothesis version."""
    seen: set[str] = set()  # prefixes of first lines: hypothesis mutates what it drew last
    cases: list[dict[str, object]] = []

    @settings(
        derandomize=True,
        max_examples=count * 6,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(_case())
    def collect(case: dict[str, object]) -> None:
        key = str(case["execs"])[:24]
        trivial = sum(len(str(x)) for x in case["execs"]) < 12 + 10 * len(case["execs"])
        if len(cases) < count and key not in seen and not trivial:
            seen.add(key)
            cases.append(case)

    collect()
    return [{"cid": f"gen-{i:03d}", **c} for i, c in enumerate(cases)]


def render(cases: list[dict[str, object]]) -> str:
    doc = {
        "_generated_by": "tests/differential/generator.py "
        f"(hypothesis {hypothesis.__version__}, derandomize=True)",
        "cases": cases,
    }
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render(generate())
    if "--check" in argv:
        current = GENERATED.read_text(encoding="utf-8") if GENERATED.exists() else ""
        return 0 if current == text else 1
    GENERATED.write_text(text, encoding="utf-8")
    print(f"wrote {GENERATED}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
