"""One JupyterLab page per test process, shared by the tests that need only "a notebook
open in JupyterLab".

A test that boots JupyterLab in a new page spends about 2 s more CPU (Chromium and the
server) than one that opens its notebook in the app already loaded (docs/testing.md,
issue 48), and the page is not what those tests are about: each opens its notebook there
(lab_notebooks.open_notebook).  After each test (its final
screenshot taken, ``SharedLabPage.give_back``) what it hooked onto the page (``page.on``
handlers, routes) is removed and what it left is undone: its documents closed (their
widget views and kernel connections with them), the light theme back, the viewport, mouse,
focus and selection as a new page has them; the next test starts with empty
``page.dialogs`` and ``page.console_errors`` (``take``).  A test that failed, or left
the page anything but JupyterLab with no document open (a navigation elsewhere, a crash,
a dialog left open, a document that would not close), hands the next test a new page.
A test that must start on a page no other test has used (one that bounds the page's
own times, say) says so with ``@pytest.mark.fresh_page``: the shared page is replaced by
a new one first.
"""

from __future__ import annotations

from .lab_waits import THEME_SETTLED

VIEWPORT = {"width": 1280, "height": 900}
LIGHT = "JupyterLab Light"

#: Close every document without a "save your changes?" question (a test's notebook is
#: its own, written again by the next run).
CLOSE_DOCUMENTS = """() => { const app = window.jupyterapp;
    for (const w of app.shell.widgets('main')) {
      if (w.context && w.context.model) w.context.model.dirty = false; }
    app.commands.execute('application:close-all'); }"""
#: No document in the main area.
NOTHING_OPEN = "() => ![...window.jupyterapp.shell.widgets('main')].some((w) => w.context)"
#: Every document gone, or a question put up instead.
CLOSED_OR_ASKED = f"() => document.querySelector('.jp-Dialog') || ({NOTHING_OPEN})()"

#: What a new page has: no selection, no focused element, the top of the document.
BLANK_SLATE = """() => { document.getSelection().removeAllRanges();
    if (document.activeElement && document.activeElement !== document.body)
      document.activeElement.blur(); }"""

DIALOG = ".jp-Dialog"


def new_page(browser):
    """A page in a context of its own; an ``alert()`` lands in ``page.dialogs``, a console
    error in ``page.console_errors`` (the lists each test starts with, empty)."""
    context = browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.dialogs = []  # any alert() from the page would be a script that ran
    pg.console_errors = []

    def on_dialog(dialog):
        pg.dialogs.append(dialog.message)
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.on("console", lambda m: m.type == "error" and pg.console_errors.append(m.text))
    return pg


def runs_jupyterlab(page, base: str) -> bool:
    """The page shows this server's JupyterLab, started and not hidden."""
    if page.is_closed() or not page.url.startswith(f"{base}/lab"):
        return False
    try:
        return bool(page.evaluate("() => !!(window.jupyterapp && window.jupyterapp.shell"
                                  " && !window.jupyterapp.shell.isHidden)"))
    except Exception:  # noqa: BLE001 - crashed or navigating: not a page to reuse
        return False


def _record_listeners(page) -> list:
    """From now on, the handlers given to ``page.on``/``page.once``, in the returned list
    (so that they can be removed: Playwright lists no page's handlers)."""
    added: list = []
    on, once = page.on, page.once

    def recording(register):
        def add(event, handler):
            added.append((event, handler))
            register(event, handler)
        return add

    page.on, page.once = recording(on), recording(once)
    return added


class SharedLabPage:
    """The process's JupyterLab page, handed to one test at a time."""

    def __init__(self, browser):
        self._browser = browser
        self._page = None
        self._added: list = []  # (event, handler) a test gave page.on/once

    def take(self, base: str, new: bool = False):
        """The page, as the next test should find it (not yet showing JupyterLab when it
        is new: open_notebook loads JupyterLab there); with ``new``, a page no test has
        used (shared with the tests after it)."""
        page = self._page
        if page is not None and (new or not (runs_jupyterlab(page, base)
                                             and page.evaluate(NOTHING_OPEN))):
            self.close()
            page = None
        if page is None:
            page = self._page = new_page(self._browser)
            self._added = _record_listeners(page)
        page.dialogs, page.console_errors = [], []
        return page

    def give_back(self, base: str, failed: bool) -> None:
        """After a test (its final screenshot taken): what it hooked onto the page removed
        and what it left undone; the page dropped if the test failed (what it left is
        unknown) or cannot be tidied."""
        page = self._page
        if page is None:
            return
        if failed or page.is_closed():
            self.close()
            return
        while self._added:
            page.remove_listener(*self._added.pop())
        page.unroute_all(behavior="ignoreErrors")
        page.context.unroute_all(behavior="ignoreErrors")
        if not (runs_jupyterlab(page, base) and self._tidy(page)):
            self.close()

    def close(self) -> None:
        if self._page is not None:
            self._page.context.close()
            self._page = None

    @staticmethod
    def _tidy(page) -> bool:
        """Close the test's documents (their widget views and kernel connections with
        them) and put back what a new page has; False if the page cannot be reused."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        if page.locator(DIALOG).count():
            return False  # a question the test left open: not ours to answer
        page.evaluate(CLOSE_DOCUMENTS)
        try:
            page.wait_for_function(CLOSED_OR_ASKED, timeout=30_000)
        except PlaywrightTimeout:
            return False  # a document would not close
        if page.locator(DIALOG).count():
            return False
        if page.viewport_size != VIEWPORT:
            page.set_viewport_size(VIEWPORT)
        if page.evaluate("() => document.body.dataset.jpThemeName") != LIGHT:
            page.evaluate("(t) => window.jupyterapp.commands.execute('apputils:change-theme',"
                          " {theme: t})", LIGHT)
            page.wait_for_function(THEME_SETTLED, arg=True, timeout=30_000)
        page.mouse.move(0, 0)
        page.evaluate(BLANK_SLATE)
        return True
