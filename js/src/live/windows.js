// The window plan of core/windows.py, ported for the live page (no kernel): every target
// position scored exactly once, with as much context as the window allows.  One rule in
// two languages: tests/cases/windows.json holds Python's plans, js/test/shared_cases and
// tests/test_shared_cases.py check both against it.  Read core/windows.py for the why.

/** A count, or an Error naming the setting (as_count's rule: an integer, not a bool). */
function asCount(name, v) {
  if (typeof v !== "number" || !Number.isInteger(v)) {
    throw new Error(`${name} must be an integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** score()'s stride when none is given: half the window (at least 1). */
export function defaultStride(maxLength) {
  return Math.max(1, Math.floor(maxLength / 2));
}

/**
 * check_window_settings: {maxLength, stride} checked by the one window rule (null stays
 * null: the model's default), or an Error with score()'s message and `field` naming the
 * control.  contextLength: the model's (maxLength must fit in it), null when unlimited.
 */
export function checkWindowSettings(maxLength, stride, { contextLength = null, prefixEveryWindow = false } = {}) {
  const fail = (field, message) => Object.assign(new Error(message), { field });
  if (typeof prefixEveryWindow !== "boolean") {
    throw fail("prefix_every_window", `prefix_every_window must be True or False, got ${prefixEveryWindow}`);
  }
  try {
    if (maxLength != null) maxLength = asCount("max_length", maxLength);
  } catch (e) {
    throw fail("max_length", e.message);
  }
  try {
    if (stride != null) stride = asCount("stride", stride);
  } catch (e) {
    throw fail("stride", e.message);
  }
  if (maxLength != null && maxLength < 1) throw fail("max_length", `max_length must be at least 1, got ${maxLength}`);
  if (prefixEveryWindow && maxLength != null && maxLength < 2) {
    throw fail("max_length", `max_length must be at least 2 with prefix_every_window=True (the prefix token and one text token), got ${maxLength}`);
  }
  if (stride != null && stride < 1) throw fail("stride", `stride must be at least 1 (1 <= stride <= max_length), got ${stride}`);
  if (maxLength != null && stride != null && stride > maxLength) {
    throw fail("stride", `stride must not exceed max_length (1 <= stride <= max_length), got stride=${stride} > max_length=${maxLength}: tokens would be skipped`);
  }
  if (maxLength != null && contextLength != null && maxLength > contextLength) {
    throw fail("max_length", `max_length must not exceed the model's context length (${contextLength}), got ${maxLength}`);
  }
  return { maxLength, stride };
}

/**
 * plan_windows: windows scoring positions firstTarget .. nPositions - 1 once each.
 * A window: {inputStart, inputEnd, targetStart, targetEnd, prefixed}; its inputs are
 * positions [inputStart, inputEnd) (position 0, the prefix token, in place of the first
 * when prefixed) and its targets [targetStart, targetEnd), with targetEnd == inputEnd + 1.
 */
export function planWindows(nPositions, maxLength, stride, { firstTarget = 1, prefixEveryWindow = false } = {}) {
  ({ maxLength, stride } = checkWindowSettings(asCount("max_length", maxLength), stride, { prefixEveryWindow }));
  if (stride == null) stride = defaultStride(maxLength);
  nPositions = asCount("n_positions", nPositions);
  firstTarget = asCount("first_target", firstTarget);
  if (nPositions < 0) throw new Error(`n_positions must be non-negative, got ${nPositions}`);
  if (firstTarget < 1) throw new Error(`first_target must be at least 1 (position 0 has no context), got ${firstTarget}`);
  const last = nPositions - 1;
  const windows = [];
  if (last < firstTarget) return windows;
  let first = firstTarget;
  // last target position of the current chunk
  let end = Math.min(first <= maxLength ? maxLength : first + stride - 1, last);
  for (;;) {
    const start = Math.max(0, end - maxLength);
    windows.push({ inputStart: start, inputEnd: end, targetStart: first, targetEnd: end + 1, prefixed: prefixEveryWindow && start > 0 });
    if (end === last) return windows;
    first = end + 1;
    end = Math.min(end + stride, last);
  }
}
