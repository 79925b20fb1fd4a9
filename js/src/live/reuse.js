// What of the previous run an edit leaves valid: scoring/runner/incremental.py's rule, ported
// (one rule in two languages: tests/cases/reuse.json holds Python's answers, checked by
// tests/test_shared_cases.py and js/test/shared_cases.test.js).  A window whose targets
// all lie before the first changed target, and whose inputs are where they were, gives
// what it gave: it is kept.  Read scoring/runner/incremental.py for the why.

import { planWindows } from "./windows.js";

/** Length of the longest common prefix of two strings (UTF-16 code units). */
export function commonPrefix(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

const sameArray = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * first_changed_target: the first target whose input may differ from the old run's.
 * old: {text, ids, start16, end16, isEos (targets it scored), unscoredIds, unscoredOffsets};
 * lay: the new layOut(), with its text.
 */
export function firstChangedTarget(old, lay, text) {
  const n = Math.min(old.ids.length, lay.nTargets);
  if (!sameArray(old.unscoredIds, lay.unscoredIds) || !sameArray(old.unscoredOffsets, lay.unscoredOffsets)) return 0;
  const shared = commonPrefix(old.text, text);
  const newIds = lay.sequence.subarray(lay.firstTarget);
  for (let i = 0; i < n; i++) {
    const eos = lay.isEos[i] === 1;
    const same = old.ids[i] === newIds[i] && old.start16[i] === lay.start16[i] && old.end16[i] === lay.end16[i]
      && (old.isEos[i] === 1) === eos && lay.end16[i] <= shared
      // an EOS target sits at the end of the text: the same text end is not enough
      && (!eos || (old.text.length === text.length && text.length === shared));
    if (!same) return i;
  }
  return n;
}

/**
 * plan_reuse: {windows, tokens, changed}: how many leading windows of `windows` (the new
 * plan) and their targets are kept from `old` (null: none), and the first changed target.
 * old also has {total (targets of its text), partial (it stopped early)}; st: the run's
 * settings ({maxLength, stride, prefixEveryWindow}), which must equal old.settingsKey's.
 */
export function planReuse(old, lay, text, windows, st) {
  if (!old) return null;
  const changed = firstChangedTarget(old, lay, text);
  const oldWindows = planWindows(old.total + 1, st.maxLength, st.stride, { firstTarget: lay.firstTarget, prefixEveryWindow: st.prefixEveryWindow });
  let keep = 0;
  for (let k = 0; k < windows.length; k++) {
    const w = windows[k], o = oldWindows[k];
    // targets are positions targetStart .. targetEnd - 1, target index = position - 1
    if (!o || o.inputStart !== w.inputStart || o.inputEnd !== w.inputEnd || o.targetStart !== w.targetStart || w.targetEnd - 1 > changed) break;
    keep = k + 1;
  }
  const completeBefore = old.ids.length === old.total && !old.partial;
  // Python re-scores the last window for the word-start correction after the last token;
  // kept here too, so the two keep the same windows
  if (keep === windows.length && !(completeBefore && old.total === lay.nTargets)) keep -= 1;
  if (keep <= 0) return { windows: 0, tokens: 0, changed };
  return { windows: keep, tokens: windows[keep - 1].targetEnd - 1, changed };
}
