"""Web benchmark: the profile list and the live preview over HTTP, with 5,000 profiles and
50,000 versions in the database.

Prints figures; targets: list p95 < 150 ms, preview + lint round trip
p95 < 100 ms. Run: `.venv/bin/python benchmarks/web.py [--profiles 5000]
[--versions 10] [--requests 200] [--postgres [URL]]`.

What it does:
- a throwaway SQLite file in a temp dir (or, with `--postgres`, a throwaway database on
  that server, dropped at the end), migrated, filled with `bulk_create` (each profile's
  unit is rendered once and reused by its versions);
- starts the real server, `manage.py runserver --noreload` (the server `make run` uses;
  requirements.txt has no other WSGI server), on a free loopback port, DEBUG off;
- logs in as an operator and times, per request, wall time from send to last byte:
  the list (first page, a search, a method filter, a version filter + a later page) and
  `POST /profiles/preview/` with a different edit each time (validation, rendering and
  the full linter, ShellCheck included, as while typing). A second preview series edits
  the GPU-free wait every time, so ShellCheck's cache cannot help (informational).
Only loopback; every loop is bounded.
"""

from __future__ import annotations

import argparse
import html as html_module
import http.cookiejar
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import django
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.ports import service_port  # noqa: E402  (after the path insert)

USERNAME, PASSWORD = "bench-operator", "bench-password-1"
LIST_TARGET_MS, PREVIEW_TARGET_MS = 150.0, 100.0
SERVER_START_TIMEOUT_S = 60


@contextmanager
def postgres_database(url: str):
    """A fresh database on the server at `url`, dropped afterwards."""
    name = f"specadmin_bench_{os.getpid()}"
    parsed = urllib.parse.urlsplit(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urllib.parse.urlunsplit(parsed._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Client:
    """A cookie-keeping HTTP client for one loopback server."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def request(self, path: str, data: dict[str, Any] | None = None) -> tuple[int, bytes, float]:
        body = urllib.parse.urlencode(data, doseq=True).encode() if data is not None else None
        req = urllib.request.Request(self.base + path, data=body)
        if data is not None:
            req.add_header("X-CSRFToken", self.csrf())
            req.add_header("Referer", self.base + path)
        started = time.perf_counter()
        try:
            with self.opener.open(req, timeout=30) as response:
                content = response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            content, status = exc.read(), exc.code
        return status, content, (time.perf_counter() - started) * 1000


def wait_for_server(client: Client, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            client.request("/accounts/login/")
            return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("server did not answer within 60 s")


def login(client: Client) -> None:
    client.request("/accounts/login/")
    status, _, _ = client.request(
        "/accounts/login/",
        {"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": client.csrf()},
    )
    status, content, _ = client.request("/profiles/")
    if status != 200 or b"Profiles" not in content:
        raise SystemExit(f"login failed (status {status})")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def series(client: Client, label: str, calls: list[tuple[str, dict | None]]) -> list[float]:
    times = []
    for path, data in calls:
        status, content, ms = client.request(path, data)
        if status != 200:
            raise SystemExit(f"{label}: {path} answered {status}: {content[:300]!r}")
        times.append(ms)
    return times


def report(label: str, times: list[float], target: float | None = None) -> bool:
    p50, p95 = statistics.median(times), percentile(times, 95)
    verdict = ""
    if target is not None:
        verdict = f"  target p95 < {target:.0f} ms: {'met' if p95 < target else 'MISSED'}"
    print(
        f"{label:<44} n={len(times):<4} p50 {p50:7.1f} ms  p95 {p95:7.1f} ms  "
        f"max {max(times):7.1f} ms{verdict}"
    )
    return target is None or p95 < target


def preview_form(client: Client, pk: int) -> dict[str, Any]:
    """The edit form's fields as the browser would send them."""
    status, content, _ = client.request(f"/profiles/{pk}/edit/")
    if status != 200:
        raise SystemExit(f"edit page answered {status}")
    html = content.decode()
    form: dict[str, Any] = {}
    for tag in re.findall(r"<(?:input|textarea|select) [^>]*>", html):
        attrs = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', tag))
        name = attrs.get("name")
        if not name or " disabled" in tag or attrs.get("type") == "hidden":
            continue
        if tag.startswith("<input") and attrs.get("type") == "checkbox":
            if " checked" in tag:
                form[name] = "on"
        elif tag.startswith("<input"):
            form[name] = attrs.get("value", "")
        elif tag.startswith("<textarea"):
            body = re.search(rf'<textarea name="{name}"[^>]*>(.*?)</textarea>', html, re.S)
            form[name] = body.group(1).strip("\n") if body else ""
        else:
            body = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', html, re.S)
            chosen = re.search(
                r'<option value="([^"]*)"[^>]*selected', body.group(1) if body else ""
            )
            form[name] = chosen.group(1) if chosen else ""
    form["profile_id"] = str(pk)
    return {k: html_module.unescape(v) for k, v in form.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", type=int, default=5000)
    parser.add_argument("--versions", type=int, default=10, help="versions per profile")
    parser.add_argument("--requests", type=int, default=200, help="requests per series")
    parser.add_argument(
        "--postgres",
        nargs="?",
        const="postgres://postgres@127.0.0.1:5432/postgres",
        help="use a throwaway database on this PostgreSQL server instead of SQLite",
    )
    args = parser.parse_args()
    n = max(1, min(args.requests, 2000))

    tmp = Path(tempfile.mkdtemp(prefix="specadmin-web-bench-"))
    proc: subprocess.Popen | None = None
    try:
        with (
            postgres_database(args.postgres)
            if args.postgres
            else _nullcontext(f"sqlite:///{tmp / 'bench.sqlite3'}")
        ) as db_url:
            env = {
                **os.environ,
                "DJANGO_SETTINGS_MODULE": "specadmin.settings",
                "DATABASE_URL": db_url,
                "SPECADMIN_VAR_DIR": str(tmp),
                "LINTUNITS_CACHE_DIR": str(tmp / "lint-cache"),
                "DEBUG": "0",
                "ALLOWED_HOSTS": "127.0.0.1",
                "LOG_LEVEL": "WARNING",
            }
            os.environ.update(env)
            print(f"backend: {'PostgreSQL' if args.postgres else 'SQLite'} ({tmp})")
            django.setup()
            # The models need the settings this run just chose, so this import follows setup.
            from benchmarks.web_data import populate  # noqa: PLC0415 (after django.setup())

            populate(args.profiles, args.versions, username=USERNAME, password=PASSWORD)
            port = service_port()  # below the ephemeral range: not taken before it binds
            proc = subprocess.Popen(
                [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            client = Client(f"http://127.0.0.1:{port}")
            wait_for_server(client, proc)
            login(client)
            print(f"server: manage.py runserver --noreload on 127.0.0.1:{port}\n")
            run_series(client, n)
    finally:
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _nullcontext(value: str):
    yield value


def run_series(client: Client, n: int) -> None:
    list_series = {
        "list: first page": [("/profiles/", None)] * n,
        "list: search (name/model/description)": [
            (f"/profiles/?q=qwen3-32b-{i % 50}", None) for i in range(n)
        ],
        "list: filter method=ngram": [("/profiles/?method=ngram", None)] * n,
        "list: filter vLLM 0.16.0, page 5": [("/profiles/?vllm=0.16.0&page=5", None)] * n,
    }
    for calls in list_series.values():  # warm-up: imports, catalogs, connections
        series(client, "warm-up", calls[:5])
    ok = True
    all_list: list[float] = []
    for label, calls in list_series.items():
        times = series(client, label, calls)
        all_list += times
        ok &= report(label, times, LIST_TARGET_MS)
    ok &= report("list: all of the above", all_list, LIST_TARGET_MS)

    _status, content, _ = client.request("/profiles/?q=kimi")
    pk = int(re.search(rb'href="/profiles/(\d+)/"', content).group(1))
    form = preview_form(client, pk)
    form["csrfmiddlewaretoken"] = client.csrf()

    def edits(vary_wait: bool) -> list[tuple[str, dict]]:
        calls = []
        for i in range(n):
            data = dict(form)
            data["description"] = f"{form['description']} edit {i}"
            data["port"] = str(9000 + i)
            data["spec_method"], data["spec_num_tokens"] = "ngram", str(1 + i % 9)
            data["spec_prompt_lookup_max"] = str(2 + i % 5)
            if i % 10 == 0:
                data["spec_prompt_lookup_min"] = "9"  # an error finding now and then
            if vary_wait:
                data["gpu_free_wait_sec"] = str(60 + i)
            calls.append(("/profiles/preview/", data))
        return calls

    series(client, "warm-up", edits(False)[:5])
    times = series(client, "preview", edits(False))
    ok &= report("preview + lint (typing in a field)", times, PREVIEW_TARGET_MS)
    times = series(client, "preview-shellcheck", edits(True))
    report("preview + lint, GPU wait edited (ShellCheck)", times)
    print("\nall targets met" if ok else "\nSOME TARGETS MISSED")


if __name__ == "__main__":
    main()
