# Runs on the host under vLLM's Python, as the unit's user (perf.onhost): argv[1] is the
# temp dir holding the servebench package, argv[2] "--probe" or nothing (then stdin holds
# servebench.runner.RunSettings as JSON, the API key included). Prints one
# "@@specadmin-servebench" line of JSON: ok true (`result`: the servebench result, or the
# probe's `python` and `aiohttp` versions), false (the run could not start: `error`), or
# null (servebench or aiohttp cannot be imported: `error`).
import json
import sys

sys.path.insert(0, sys.argv[1])


def say(**kw):
    sys.stdout.write("@@specadmin-servebench " + json.dumps(kw) + "\n")
    sys.stdout.flush()
    sys.exit(0)


try:
    import aiohttp
    from servebench.runner import BenchError, RunSettings, run_sync
except Exception as exc:
    say(ok=None, error=f"cannot import servebench and aiohttp: {type(exc).__name__}: {exc}"[:2000])
if sys.argv[2:] == ["--probe"]:
    say(ok=True, python=sys.version.split()[0], aiohttp=aiohttp.__version__)
try:
    result = run_sync(RunSettings(**json.loads(sys.stdin.read())))
except (BenchError, ValueError, TypeError) as exc:
    say(ok=False, error=str(exc)[:2000])
say(ok=True, result=result.to_dict())
