// The host page's theme (light / dark) and the colour variables a view sets from it.
// Every view (the widget, the pairs, the comparison) reads the theme and sets its palette
// here, and follows a live switch (followTheme).

import { ATTRIBUTION_COLOURS, rgbCss } from "./colors.js";

/** "light" or "dark" for the surroundings of el (JupyterLab, else computed, else OS). */
export function detectTheme(el) {
  const body = el.ownerDocument.body;
  const flag = body && body.getAttribute("data-jp-theme-light");
  if (flag === "true") return "light";
  if (flag === "false") return "dark";
  for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
    const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(getComputedStyle(n).backgroundColor);
    if (m && (m[4] === undefined || Number(m[4]) > 0.5)) {
      const lum = (0.2126 * m[1] + 0.7152 * m[2] + 0.0722 * m[3]) / 255;
      return lum < 0.5 ? "dark" : "light";
    }
  }
  return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

/** Mark root with the theme's class (pplw-dark / pplw-light): the CSS keys off it. */
export function setThemeClass(root, theme) {
  root.classList.toggle("pplw-dark", theme === "dark");
  root.classList.toggle("pplw-light", theme === "light");
}

/** Set a palette ([{bg, fg}]) on root as CSS variables --{bgVar}{k} and --{fgVar}{k}. */
export function setPaletteVars(root, pal, bgVar, fgVar) {
  for (let k = 0; k < pal.length; k++) {
    root.style.setProperty(`--${bgVar}${k}`, rgbCss(pal[k].bg));
    root.style.setProperty(`--${fgVar}${k}`, rgbCss(pal[k].fg));
  }
}

/** The attribution rule's colours of a theme on root: --pplw-helped and --pplw-hurt (the
 * explanation panel's numbers and key use them; the text, the ramp they end). */
export function setAttributionVars(root, theme) {
  const c = ATTRIBUTION_COLOURS[theme === "dark" ? "dark" : "light"];
  root.style.setProperty("--pplw-helped", c.helped);
  root.style.setProperty("--pplw-hurt", c.hurt);
}

/** Call onChange when JupyterLab switches theme (its body flags change) or, on an exported
 * page, the OS does (the page's background follows prefers-color-scheme); returns a stop
 * function. */
export function watchTheme(doc, onChange) {
  const obs = new MutationObserver(onChange);
  obs.observe(doc.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "class"] });
  const win = doc.defaultView;
  const media = win && win.matchMedia ? win.matchMedia("(prefers-color-scheme: dark)") : null;
  if (media && media.addEventListener) media.addEventListener("change", onChange);
  return () => {
    obs.disconnect();
    if (media && media.removeEventListener) media.removeEventListener("change", onChange);
  };
}

/**
 * Keep a view on the page's theme: apply(theme) now and again whenever JupyterLab
 * switches it (only when it changed).  Sets root's theme class before apply runs.
 * Returns a stop function (call it in the view's destroy).
 */
export function followTheme(el, root, apply) {
  let current = null;
  const check = () => {
    const theme = detectTheme(el);
    if (theme === current) return;
    current = theme;
    setThemeClass(root, theme);
    apply(theme);
  };
  check();
  return watchTheme(el.ownerDocument, check);
}
