"""What the browser tests share (a pytest plugin, see tests/conftest.py): Debian's headless
Chromium driven by Playwright, screenshots under `artifacts/screenshots/` (git-ignored; look
at them), and the check that a page is no wider than the window.

Fixtures: `page` (a logged-out tab, 1440×1000) and `open_page(width, height)` for other
window sizes. Tests using them are marked `browser` and skipped without Chromium.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright import sync_api as playwright_sync
except ImportError:  # optional: without Playwright the browser tests are skipped
    playwright_sync = None

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
PASSWORD = "correct-horse-battery"
expect: Any = playwright_sync.expect if playwright_sync else None

# The page's own width against the window's, and the elements that stick out (to say
# which one does). An element inside a box that scrolls sideways does not widen the page.
_OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const scroll = Math.max(document.documentElement.scrollWidth, document.body.scrollWidth);
  const inScroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  };
  const wide = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > width + 1 && !inScroller(el)) {
      const id = el.id ? '#' + el.id : '';
      const cls = el.className && typeof el.className === 'string'
        ? '.' + el.className.trim().split(/\\s+/).join('.') : '';
      wide.push(`${el.tagName.toLowerCase()}${id}${cls} (right edge ${Math.round(r.right)})`);
    }
  }
  return {width, scroll, wide: wide.slice(0, 8)};
}"""


def shot(page: Any, name: str) -> Path:
    """A full-page screenshot, `artifacts/screenshots/NAME.png`."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def overflow(page: Any) -> str | None:
    """None when the page fits its window; else what sticks out, in words."""
    found = page.evaluate(_OVERFLOW_JS)
    if found["scroll"] <= found["width"]:
        return None
    return (
        f"{page.url}: {found['scroll']} px wide in a {found['width']} px window; "
        f"sticking out: {', '.join(found['wide']) or 'nothing visible'}"
    )


def login(page: Any, base: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


@pytest.fixture
def open_page(
    live_server: object, transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Any]]:
    """`open_page(width=1440, height=1000)` → a new tab in a window of that size."""
    if playwright_sync is None or not Path(CHROMIUM).exists():
        pytest.skip("needs Playwright and Debian's chromium")
    # Playwright's sync API runs an event loop in the test's thread, and Django refuses ORM
    # calls there unless this is set (docs.djangoproject.com/en/stable/topics/async/
    # #envvar-DJANGO_ALLOW_ASYNC_UNSAFE). For these tests only: elsewhere it would hide
    # real ORM calls from async code; monkeypatch removes it after the test.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        contexts = []

        def new_page(width: int = 1440, height: int = 1000) -> Any:
            context = browser.new_context(viewport={"width": width, "height": height})
            context.set_default_timeout(10_000)
            contexts.append(context)
            return context.new_page()

        try:
            yield new_page
        finally:
            for context in contexts:
                context.close()
            browser.close()


@pytest.fixture
def page(open_page: Callable[..., Any]) -> Any:
    return open_page()
