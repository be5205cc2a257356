"""Debian's chromium, driven by Playwright, for the tests that look at a page."""
import contextlib
import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@contextlib.contextmanager
def offline_page(width: int = 1280, height: int = 900):
    """A page in headless Chromium with the network off: what opens must stand on its own."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser.new_context(viewport={"width": width, "height": height}, offline=True).new_page()
        finally:
            browser.close()
