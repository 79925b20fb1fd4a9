// The widget's height fits a short text: beside the side panel (metrics, settings: some
// 550 px) a two-line text left a large empty area under it.  Below SHORT_TEXT_PX the panel
// goes under the text, its sections side by side (as in a narrow cell), so the widget is
// as tall as text + panel row.  The text column is wider there, so it only gets shorter:
// the layout cannot flip back and forth.

export const SHORT_TEXT_PX = 280;

/** Whether the panel goes under a text column this tall (px). */
export function isShort(textHeight) {
  return textHeight > 0 && textHeight < SHORT_TEXT_PX;
}

/** Toggle root's pplw-stacked class as textcol's height changes; returns a stop function. */
export function stackWhenShort(root, textcol) {
  if (typeof ResizeObserver === "undefined") return () => {};
  const obs = new ResizeObserver(() => root.classList.toggle("pplw-stacked", isShort(textcol.offsetHeight)));
  obs.observe(textcol);
  return () => obs.disconnect();
}
