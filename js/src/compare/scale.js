// The diverging colour scale of the comparison view.  Pure: no DOM.
//
// A word's difference d = surprisal(A) - surprisal(B) in the unit shown maps to
// one of NDIV bins, centred on zero: negative (A was less surprised, A did
// better) towards one end, positive (B did better) towards the other, equal in
// the neutral middle bin.  |d| >= max shares the end bins.

import { divergingRamp, palette } from "../colors.js";

export const HALF = 8;
export const NDIV = 2 * HALF + 1; // odd: zero has a bin of its own

/** Bin 0..NDIV-1 of a difference d against the half-width max (same unit); NaN -> -1. */
export function diffBin(d, max) {
  if (!Number.isFinite(d) || !(max > 0)) return -1;
  const k = Math.round((d / max) * HALF);
  return HALF + Math.max(-HALF, Math.min(HALF, k));
}

/** The NDIV colours of a theme ("light" | "dark"): [{bg, fg}] as [r, g, b]. */
export function divergingPalette(theme) {
  return palette(divergingRamp(theme), NDIV);
}

/** The legend's ticks: [{at (0..1 along the bar), label}] for -max, 0, +max. */
export function diffTicks(max, unit = "bits") {
  const fmt = (v) => `${Math.round(v * 10) / 10}`;
  return [
    { at: 0, label: `≥${fmt(max)}` },
    { at: 0.25, label: fmt(max / 2) },
    { at: 0.5, label: `0 ${unit}` },
    { at: 0.75, label: fmt(max / 2) },
    { at: 1, label: `≥${fmt(max)}` },
  ];
}
