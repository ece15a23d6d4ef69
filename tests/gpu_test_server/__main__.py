"""`python -m tests.gpu_test_server --port 0 [--prompt-lookup-tokens 3] [--size gpu|tiny]`.

Prints `serving http://HOST:PORT` once the model is on the device and the port is open.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import torch
from aiohttp import web

from tests.gpu_test_server.engine import Engine
from tests.gpu_test_server.model import SIZES, WordTokenizer, build_model
from tests.gpu_test_server.server import make_app


async def serve(args: argparse.Namespace) -> None:
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    size = args.size or ("gpu" if device.startswith("cuda") else "tiny")
    model = build_model(size, device, seed=args.seed)
    engine = Engine(model, device, args.prompt_lookup_tokens)
    runner = web.AppRunner(make_app(engine, WordTokenizer(SIZES[size]["vocab_size"])))
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, backlog=2048)
    await site.start()
    port = runner.addresses[0][1]
    print(
        f"serving http://{args.host}:{port} (device {device}, size {size}, prompt lookup "
        f"{args.prompt_lookup_tokens or 'off'})",
        flush=True,
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await runner.cleanup()


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m tests.gpu_test_server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto (cuda if available), cuda, cpu")
    p.add_argument("--size", choices=sorted(SIZES), help="default: gpu on CUDA, tiny on CPU")
    p.add_argument(
        "--prompt-lookup-tokens",
        type=int,
        default=0,
        help="transformers' prompt_lookup_num_tokens (0: baseline, no drafts)",
    )
    p.add_argument("--seed", type=int, default=0)
    asyncio.run(serve(p.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
