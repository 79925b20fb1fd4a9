// What the live page says about its models' downloads, and how long it waits after a
// keystroke: pure helpers of index.js (tested in node).

import { DEBOUNCE_MS } from "../editor.js";

/** The shortest pause after a keystroke before a run starts: below it, runs would start
 * between the keys of one word. */
export const MIN_WAIT_MS = 150;

/** The pause to wait after typing, fitted to what a run of the model costs: a model that
 * scores in a few ms (the n-gram) runs soon after the last key; one whose run takes
 * seconds waits the widget's full debounce, so it does not start a run on every pause. */
export function fittedWait(runMs) {
  if (!(runMs >= 0)) return DEBOUNCE_MS; // not measured yet
  return Math.round(Math.min(DEBOUNCE_MS, Math.max(MIN_WAIT_MS, 2 * runMs)));
}

/** A size for people: "840 kB", "541.9 MB", "size unknown". */
export function sizeText(bytes) {
  if (bytes == null || !(bytes >= 0)) return "size unknown";
  return bytes < 1e6 ? `${Math.max(1, Math.round(bytes / 1e3))} kB` : `${(bytes / 1e6).toFixed(1)} MB`;
}

/** The download bar's words: "downloading 12.3 of 541.9 MB", "… 12.3 MB" (total not
 * known), or "building the model…" once every byte is in. */
export function progressText(loaded, total) {
  const mb = (b) => (b / 1e6).toFixed(1);
  if (total != null && loaded >= total) return `downloaded ${mb(total)} MB: building the model…`;
  return total != null ? `downloading ${mb(loaded)} of ${mb(total)} MB` : `downloading ${mb(loaded)} MB`;
}
