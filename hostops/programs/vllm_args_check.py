# Runs on the host under vLLM's Python (hostops.vllm_check); argv[1] is
# {"style": …, "args": [...]}. Prints one "@@specadmin-vllm-check" line of JSON: ok true
# (accepted), false (rejected: error), or null (could not check: error says why); `note`
# for what only the engine start can check.
import contextlib
import io
import json
import sys

out = {"stage": "import vllm"}


def done(**kw):
    out.update(kw)
    print("@@specadmin-vllm-check " + json.dumps(out), flush=True)
    sys.exit(0)


def error(exc):
    return f"{type(exc).__name__}: {exc}"[-3000:]


req = json.loads(sys.argv[1])
try:
    import vllm
except Exception as exc:
    done(ok=None, error="cannot import vllm: " + error(exc))
out["version"] = str(getattr(vllm, "__version__", "?"))
try:
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    from vllm.entrypoints.openai.cli_args import make_arg_parser
    from vllm.engine.arg_utils import AsyncEngineArgs
except Exception as exc:
    done(ok=None, error="this vLLM has no argument parser where specadmin looks: " + error(exc))
out["stage"] = "arguments"
parser = FlexibleArgumentParser(prog="vllm serve" if req["style"] == "serve" else "api_server")
if req["style"] == "serve":
    parser.add_argument("model_tag", nargs="?")
captured = io.StringIO()
try:
    with contextlib.redirect_stderr(captured):
        parser = make_arg_parser(parser)
        args = parser.parse_args(req["args"])
except SystemExit as exc:
    done(ok=False, error=captured.getvalue().strip()[-3000:] or f"argparse exited {exc.code}")
except Exception as exc:
    done(ok=False, error=error(exc))
if getattr(args, "model_tag", None):
    args.model = args.model_tag
out["stage"] = "engine arguments"
try:
    engine_args = AsyncEngineArgs.from_cli_args(args)
except Exception as exc:
    done(ok=False, error=error(exc))
spec = getattr(engine_args, "speculative_config", None)
if spec:
    out["stage"] = "speculative config"
    try:
        try:
            from vllm.config import SpeculativeConfig
        except ImportError:
            from vllm.config.speculative import SpeculativeConfig
        SpeculativeConfig(**spec)
    except Exception as exc:
        text = error(exc)
        if "target_model_config" in text or "target_parallel_config" in text:
            done(
                ok=True,
                note="the speculative config depends on the model: the engine "
                "start checks it (" + text[:300] + ")",
            )
        done(ok=False, error=text)
done(ok=True)
