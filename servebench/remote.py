"""servebench run on a host by the deploy job (perf.onhost): `python -I DIR/servebench/
remote.py [--probe]`, with the package unpacked in DIR.

Stdin holds `servebench.runner.RunSettings` as JSON (the API key included: never an argv).
Prints one "@@specadmin-servebench" line of JSON: ok true (`result`, or with `--probe` the
`python` and `aiohttp` versions), false (the run could not start: `error`), or null
(servebench or aiohttp cannot be imported: `error`). Stdlib only until that import, so
the answer comes even from a Python without aiohttp.
"""

import json
import os
import sys
from typing import NoReturn

MARKER = "@@specadmin-servebench "


def say(**answer: object) -> NoReturn:
    sys.stdout.write(MARKER + json.dumps(answer) + "\n")
    sys.stdout.flush()
    sys.exit(0)


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    # The package's parent, not its own folder, is what `import servebench` needs (the
    # folder itself would put `client`, `report`… at the top level).
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.dirname(here))
    try:
        import aiohttp  # noqa: PLC0415 (its absence is an answer, not a crash)

        from servebench.runner import BenchError, RunSettings, run_sync  # noqa: PLC0415
    except Exception as exc:  # any import failure is the answer
        say(
            ok=None,
            error=f"cannot import servebench and aiohttp: {type(exc).__name__}: {exc}"[:2000],
        )
    if sys.argv[1:] == ["--probe"]:
        say(ok=True, python=sys.version.split()[0], aiohttp=aiohttp.__version__)
    try:
        result = run_sync(RunSettings(**json.loads(sys.stdin.read())))
    except (BenchError, ValueError, TypeError) as exc:
        say(ok=False, error=str(exc)[:2000])
    say(ok=True, result=result.to_dict())


if __name__ == "__main__":
    main()
