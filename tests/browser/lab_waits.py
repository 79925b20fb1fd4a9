"""Conditions that say a JupyterLab page has finished a step, for tests to wait on
(never a fixed sleep): a theme switch applied, a Vega chart drawn."""

from __future__ import annotations

#: JupyterLab flips body's data-jp-theme-light only once the new theme's stylesheet has
#: loaded (its ThemeManager emits themeChanged after the <link>'s load event); it then
#: hides the shell, shows it again in the next animation frame and removes the splash
#: screen it put up for the switch.  So: the flag, the shell shown, no splash = the
#: theme's CSS applies and nothing covers the page.  (The views re-colour in a
#: MutationObserver on that flag, which runs before this check can.)
THEME_SETTLED = """(light) => document.body.dataset.jpThemeLight === String(light)
    && !document.getElementById('jupyterlab-splash')
    && !window.jupyterapp.shell.isHidden"""

#: Vega's SVG renderer makes its <svg class="marks"> first and draws the scene into it in
#: one pass: an axis label and a mark inside it mean the chart is drawn.
CHART_DRAWN = """(sel) => [...document.querySelectorAll(sel)].some((s) =>
    s.querySelector('.role-axis-label text') && s.querySelector('.role-mark'))"""


def switch_theme(page, name: str, light: bool, timeout: float = 30_000) -> None:
    """Switch JupyterLab to the theme `name` (light or not) and wait until it applies."""
    page.evaluate("(t) => window.jupyterapp.commands.execute('apputils:change-theme',"
                  " {theme: t})", name)
    page.wait_for_function(THEME_SETTLED, arg=light, timeout=timeout)


def wait_for_chart(page, selector: str = "svg.marks", timeout: float = 60_000) -> None:
    """Wait until a Vega chart matching `selector` (its <svg class="marks">) is drawn."""
    page.wait_for_function(CHART_DRAWN, arg=selector, timeout=timeout)
