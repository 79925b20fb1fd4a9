// The widget's DOM skeleton: toolbar, editor, progress row, error box, the scrolling text
// and the side panel (metrics, selection, settings), and the tooltip over them.

import { ContextView } from "./context.js";
import { TextEditor } from "./editor.js";
import { h } from "./dom.js";
import { stackWhenShort } from "./fit.js";
import { MetricsPanel, SelectionPanel, SettingsPanel } from "./panel.js";
import { ProgressRow, Toolbar } from "./toolbar.js";
import { Tooltip } from "./tooltip.js";

/** The alert box both views show a kernel error in. */
export function errorBox() {
  return h("div", { class: "pplw-error", attrs: { role: "alert", hidden: true } });
}

/**
 * Build the widget's parts inside el.  on: {toolbar (Toolbar's callbacks), cancel(),
 * settings(values), text(newText)}.  id names the tooltip (aria-describedby).
 */
export function buildLayout(el, id, on) {
  const root = h("div", { class: "pplw-root" });
  const toolbar = new Toolbar(on.toolbar);
  const progress = new ProgressRow(on.cancel);
  const error = errorBox();
  const content = h("div", { class: "pplw-content" });
  const scroller = h(
    "div",
    { class: "pplw-scroller", attrs: { tabindex: 0, role: "region", "aria-label": "Scored text" } },
    content,
  );
  const metrics = new MetricsPanel();
  const selPanel = new SelectionPanel();
  const settings = new SettingsPanel(on.settings);
  const panel = h("aside", { class: "pplw-panel" }, metrics.el, selPanel.el, settings.el);
  // what the model read first (not scored): uncoloured, before the text
  const contextView = new ContextView();
  const textcol = h("div", { class: "pplw-textcol" }, contextView.el, scroller);
  const main = h("div", { class: "pplw-main" }, textcol, panel);
  // editable mode: the text box sets the text trait; the kernel re-scores what changed
  const editor = new TextEditor(on.text);
  root.append(toolbar.el, editor.el, progress.el, error, main);
  const tooltip = new Tooltip(root);
  tooltip.el.id = `pplw-tt-${id}`;
  el.appendChild(root);
  const stopFit = stackWhenShort(root, textcol); // a short text: the panel goes under it
  return { stopFit, root, toolbar, progress, errorBox: error, content, scroller, aside: panel, metrics, selPanel, settings, editor, tooltip, contextView };
}
