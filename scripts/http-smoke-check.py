#!/usr/bin/env python3
"""Wait for a started specadmin, log in and fetch a page and a static file: the "one page
served" of the fresh-machine check (stdlib only).

    http-smoke-check.py BASE_URL USER PASSWORD [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import http.cookiejar
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def fetch(opener: urllib.request.OpenerDirector, url: str, data: dict | None = None) -> tuple:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body)
    if data is not None:
        request.add_header("Referer", url)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.geturl(), response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, url, exc.read().decode("utf-8", "replace")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("user")
    parser.add_argument("password")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    login = f"{args.base}/accounts/login/"
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            status, _, page = fetch(opener, login)
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                print(f"{login}: no answer within {args.timeout:.0f} s ({exc})")
                return 1
            time.sleep(0.5)
    if status != 200:
        print(f"{login}: HTTP {status}")
        return 1
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if token is None:
        print(f"{login}: no CSRF token in the login form")
        return 1
    status, landed, page = fetch(
        opener,
        login,
        {"username": args.user, "password": args.password, "csrfmiddlewaretoken": token[1]},
    )
    if status != 200 or landed.endswith("/accounts/login/"):
        print(f"login as {args.user}: HTTP {status} at {landed}")
        return 1
    checks = [
        (f"{args.base}/profiles/", "vllm-kimi"),
        (f"{args.base}/static/css/specadmin.css", "{"),
    ]
    for url, expected in checks:
        status, _, body = fetch(opener, url)
        if status != 200 or expected not in body:
            print(f"{url}: HTTP {status}, expected “{expected}” in the body")
            return 1
        print(f"{url}: HTTP 200")
    return 0


if __name__ == "__main__":
    sys.exit(main())
