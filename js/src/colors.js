// Colour scales.  Pure: no DOM.
//
// Every value is mapped to t in [0, 1] ("how surprising"), quantised into
// NBINS bins; each bin is a CSS class (.pplw-c0 ... .pplw-c31 in widget.css)
// whose colours come from CSS variables set on the widget root, so a theme
// switch changes NBINS variables and touches no token span.
//
// Two sequential ramps, interpolated in OKLab (perceptually even steps):
// on a light background low values are pale and high values dark; on a dark
// background low values sit close to the background and high values glow.
// Either way "more colour = more surprising", and the text colour of each
// bin is whichever of black / white contrasts more with it.

export const NBINS = 32;

export const MODES = Object.freeze(["surprisal", "probability", "rank", "entropy", "context_gain", "kl"]);

export const MODE_LABELS = Object.freeze({
  surprisal: "Surprisal",
  probability: "Probability",
  rank: "Rank",
  entropy: "Entropy",
  context_gain: "Context gain",
  kl: "KL divergence",
});

// Modes that words and sentences can be coloured by (rank and entropy are per token).
export const UNIT_MODES = Object.freeze(["surprisal", "probability", "context_gain"]);
// Context gain can be negative (the context made a token less likely than its unigram
// probability), so it gets a diverging scale: GAIN_BINS bins, zero in the middle one.
export const GAIN_MAX_BITS = 16;
export const GAIN_HALF = 15;
export const GAIN_BINS = 2 * GAIN_HALF + 1;

// KL(base ‖ other) of a divergence view (nats): a log scale, as values span decades
// (a quantized copy: most tokens below 0.01, a few above 1); at most KL_MIN_NATS is the
// palest bin, at least KL_MAX_NATS the darkest.
export const KL_MIN_NATS = 1e-3;
export const KL_MAX_NATS = 10;
const KL_DECADES = Math.log10(KL_MAX_NATS / KL_MIN_NATS);

// Upper ends of the continuous scales (values above are clamped).
export const SURPRISAL_MAX_BITS = 16;
export const ENTROPY_MAX_BITS = 10;

export const RANK_BUCKETS = Object.freeze([
  { max: 10, label: "top 10" },
  { max: 100, label: "top 100" },
  { max: 1000, label: "top 1000" },
  { max: Infinity, label: "rest" },
]);
// Bin used for each rank bucket (spread over the scale).
export const RANK_BINS = Object.freeze([0, 12, 22, NBINS - 1]);

const LN2 = Math.LN2;

const clamp01 = (t) => (t < 0 ? 0 : t > 1 ? 1 : t);

/** Rank (1 = top choice) -> bucket 0..3 (top10, top100, top1000, rest); -1 if invalid. */
export function rankBucket(rank) {
  if (!(rank >= 1)) return -1;
  for (let b = 0; b < RANK_BUCKETS.length; b++) if (rank <= RANK_BUCKETS[b].max) return b;
  return RANK_BUCKETS.length - 1;
}

/** t in [0, 1] -> bin 0..NBINS-1 (clamped); NaN -> -1. */
export function binOfT(t) {
  if (!(t === t)) return -1; // NaN
  const b = Math.floor(clamp01(t) * NBINS);
  return b >= NBINS ? NBINS - 1 : b;
}

/**
 * Bin of one token for a mode, from surprisal (nats), entropy (nats) and
 * rank.  Surprisal: bits over [0, SURPRISAL_MAX_BITS]; probability: 1 - p
 * (a sure token is pale, an unlikely one dark); rank: its bucket; entropy:
 * bits over [0, ENTROPY_MAX_BITS]; KL: log10 between KL_MIN_NATS and KL_MAX_NATS.
 * Invalid values give -1.
 */
export function binFor(mode, surprisalNats, entropyNats, rank, gainNats, klNats = NaN) {
  switch (mode) {
    case "kl": {
      if (!(klNats >= 0)) return -1;
      return binOfT(klNats <= KL_MIN_NATS ? 0 : Math.log10(klNats / KL_MIN_NATS) / KL_DECADES);
    }
    case "context_gain": {
      // log P(w|ctx) - log P_uni(w): above the middle bin the context helped, below it hurt
      if (!(gainNats === gainNats) || gainNats == null) return -1;
      const k = Math.round((gainNats / LN2 / GAIN_MAX_BITS) * GAIN_HALF);
      return GAIN_HALF + Math.max(-GAIN_HALF, Math.min(GAIN_HALF, k));
    }
    case "probability": {
      if (!(surprisalNats >= 0)) return -1;
      return binOfT(1 - Math.exp(-surprisalNats));
    }
    case "rank": {
      const b = rankBucket(rank);
      return b < 0 ? -1 : RANK_BINS[b];
    }
    case "entropy":
      if (!(entropyNats >= 0)) return -1;
      return binOfT(entropyNats / LN2 / ENTROPY_MAX_BITS);
    default:
      if (!(surprisalNats >= 0)) return -1;
      return binOfT(surprisalNats / LN2 / SURPRISAL_MAX_BITS);
  }
}

/** Bin of token i of a TokenStore. */
export function tokenBin(mode, store, i) {
  const kl = store.divergence ? store.divergence.fields.kl[i] : NaN;
  return binFor(mode, store.surprisal[i], store.entropy[i], store.rank[i], store.context_gain[i], kl);
}

/**
 * Bin of unit u of a UnitStats (levels.js): its surprisal (a word's, or a
 * sentence's mean per word) on the token scale, its probability, or its
 * context gain; rank and entropy colour by surprisal at these levels.
 */
export function unitBin(mode, stats, u, corrected = null) {
  if (mode === "context_gain") return binFor(mode, NaN, NaN, 0, stats.value(u, "context_gain"));
  const s = stats.value(u, "surprisal", corrected);
  return binFor(mode === "probability" ? "probability" : "surprisal", s, NaN, 0, NaN);
}

// --- colour maths -------------------------------------------------------

export function hexToRgb(hex) {
  const h = hex.replace("#", "");
  return [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
}

const toLinear = (c) => {
  const v = c / 255;
  return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
};
const fromLinear = (v) => {
  const c = v <= 0.0031308 ? 12.92 * v : 1.055 * v ** (1 / 2.4) - 0.055;
  return Math.round(clamp01(c) * 255);
};

function rgbToOklab([r, g, b]) {
  const R = toLinear(r);
  const G = toLinear(g);
  const B = toLinear(b);
  const l = Math.cbrt(0.4122214708 * R + 0.5363325363 * G + 0.0514459929 * B);
  const m = Math.cbrt(0.2119034982 * R + 0.6806995451 * G + 0.1073969566 * B);
  const s = Math.cbrt(0.0883024619 * R + 0.2817188376 * G + 0.6299787005 * B);
  return [
    0.2104542553 * l + 0.793617785 * m - 0.0040720468 * s,
    1.9779984951 * l - 2.428592205 * m + 0.4505937099 * s,
    0.0259040371 * l + 0.7827717662 * m - 0.808675766 * s,
  ];
}

function oklabToRgb([L, a, b]) {
  const l = (L + 0.3963377774 * a + 0.2158037573 * b) ** 3;
  const m = (L - 0.1055613458 * a - 0.0638541728 * b) ** 3;
  const s = (L - 0.0894841775 * a - 1.291485548 * b) ** 3;
  return [
    fromLinear(4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s),
    fromLinear(-1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s),
    fromLinear(-0.0041960863 * l - 0.7034186147 * m + 1.707614701 * s),
  ];
}

/** WCAG relative luminance of an sRGB triple (0..255). */
export function luminance([r, g, b]) {
  return 0.2126 * toLinear(r) + 0.7152 * toLinear(g) + 0.0722 * toLinear(b);
}

export function contrastRatio(c1, c2) {
  const a = luminance(c1);
  const b = luminance(c2);
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}

export const DARK_TEXT = [0, 0, 0];
export const LIGHT_TEXT = [255, 255, 255];

/** Text colour for a background: whichever of black / white contrasts more. */
export function textColorFor(bg) {
  return contrastRatio(bg, DARK_TEXT) >= contrastRatio(bg, LIGHT_TEXT) ? DARK_TEXT : LIGHT_TEXT;
}

// Helped and hurt, the one colour rule of an explanation (views/attribution_colours.py is
// the rule; tests/cases/attribution_colours.json checks this copy against it): orange =
// the unit helped predict the target, blue = it hurt; per theme the strongest colour of
// each side (the diverging ramp's ends below).
export const ATTRIBUTION_NAMES = Object.freeze({ helped: "orange", hurt: "blue" });
export const ATTRIBUTION_COLOURS = Object.freeze({
  light: Object.freeze({ helped: "#a8520a", hurt: "#1f5fa8" }),
  dark: Object.freeze({ helped: "#f7a24a", hurt: "#6fb4f0" }),
});

/** "orange = helped, blue = hurt": the words every legend of an explanation uses. */
export function attributionKey() {
  return `${ATTRIBUTION_NAMES.helped} = helped, ${ATTRIBUTION_NAMES.hurt} = hurt`;
}

// Control points, low -> high.
export const RAMPS = Object.freeze({
  light: [
    [0.0, "#fbf7ea"],
    [0.22, "#fde2a4"],
    [0.47, "#f89a58"],
    [0.72, "#d24a63"],
    [1.0, "#4b176e"],
  ],
  dark: [
    [0.0, "#2c2a37"],
    [0.25, "#4b2b78"],
    [0.5, "#983579"],
    [0.75, "#e5634a"],
    [1.0, "#fde27b"],
  ],
  // Two-sided (comparison view, context gain, attribution): t = 0 one side much better
  // (hurt), 0.5 equal, 1 the other much better (helped); blue / orange stay apart for
  // red-green colour blindness.  Its ends are the attribution rule's colours.
  "diverging-light": [
    [0.0, ATTRIBUTION_COLOURS.light.hurt],
    [0.25, "#8fbce0"],
    [0.5, "#f5f5f2"],
    [0.75, "#f5b26b"],
    [1.0, ATTRIBUTION_COLOURS.light.helped],
  ],
  "diverging-dark": [
    [0.0, ATTRIBUTION_COLOURS.dark.hurt],
    [0.25, "#2f5478"],
    [0.5, "#2c2a37"],
    [0.75, "#7a4a1c"],
    [1.0, ATTRIBUTION_COLOURS.dark.helped],
  ],
});

const LAB_RAMPS = Object.fromEntries(
  Object.entries(RAMPS).map(([k, pts]) => [k, pts.map(([t, hex]) => [t, rgbToOklab(hexToRgb(hex))])]),
);

/** Colour of the ramp of `theme` ("light" | "dark") at t (clamped to [0, 1]). */
export function rampRgb(theme, t) {
  const pts = LAB_RAMPS[theme] || LAB_RAMPS.light;
  const x = clamp01(Number.isNaN(t) ? 0 : t);
  let k = 0;
  while (k < pts.length - 2 && x > pts[k + 1][0]) k++;
  const [t0, c0] = pts[k];
  const [t1, c1] = pts[k + 1];
  const u = t1 > t0 ? (x - t0) / (t1 - t0) : 0;
  return oklabToRgb([0, 1, 2].map((j) => c0[j] + (c1[j] - c0[j]) * u));
}

export const rgbCss = ([r, g, b]) => `rgb(${r}, ${g}, ${b})`;

/** The `bins` colours of a ramp (a theme, or another RAMPS key): [{bg, fg}] as [r, g, b];
 * bin k sits at t = k/(bins-1). */
export function palette(theme, bins = NBINS) {
  const out = [];
  for (let k = 0; k < bins; k++) {
    const bg = rampRgb(theme, k / (bins - 1));
    out.push({ bg, fg: textColorFor(bg) });
  }
  return out;
}

/** The two-sided ramp of a theme (context gain, the comparison view's differences). */
export function divergingRamp(theme) {
  return theme === "dark" ? "diverging-dark" : "diverging-light";
}

/** The ramp a mode is drawn with: diverging for context gain, else the theme's own. */
export function rampFor(mode, theme) {
  return mode === "context_gain" ? divergingRamp(theme) : theme;
}

/** The NBINS bin colours for a mode and theme (context gain uses GAIN_BINS of them). */
export function modePalette(mode, theme) {
  if (mode !== "context_gain") return palette(theme);
  const pal = palette(rampFor(mode, theme), GAIN_BINS);
  while (pal.length < NBINS) pal.push(pal[pal.length - 1]);
  return pal;
}

// Attribution (why a target is surprising): each context unit's delta_nats, positive when
// the unit made the target more predictable.  Drawn with the context-gain ramp (its ends
// are ATTRIBUTION_COLOURS: orange = helped, blue = hurt; GAIN_BINS bins, zero in the
// middle one), scaled to the largest |delta| shown so far, never below
// ATTRIBUTION_MIN_SCALE_NATS (noise stays pale).
export const ATTRIBUTION_MIN_SCALE_NATS = 0.25;

/** The scale (nats) that maps to the ramp's ends: max |delta| of the finite deltas. */
export function attributionScale(deltas) {
  let m = ATTRIBUTION_MIN_SCALE_NATS;
  for (const d of deltas) if (d != null && Number.isFinite(d) && Math.abs(d) > m) m = Math.abs(d);
  return m;
}

/** Bin of one unit's delta (nats) on the diverging ramp; -1 when not computed (NaN/null). */
export function attributionBin(deltaNats, scaleNats) {
  if (deltaNats == null || !(deltaNats === deltaNats)) return -1;
  const k = Math.round((deltaNats / scaleNats) * GAIN_HALF);
  return GAIN_HALF + Math.max(-GAIN_HALF, Math.min(GAIN_HALF, k));
}

/** The legend while an explanation is shown (legendFor's shape): the diverging scale
 * from −scale (hurt) through 0 to +scale (helped), in the unit shown. */
export function attributionLegend(scaleNats, unit = "bits") {
  const nats = unit === "nats";
  const v = nats ? scaleNats : scaleNats / LN2;
  const label = (x) => String(Math.round(x * 100) / 100);
  return {
    title: `attribution (${nats ? "nats" : "bits"}): ${attributionKey()}`,
    kind: "continuous",
    bins: GAIN_BINS,
    ticks: [
      { at: 0, label: `≤−${label(v)}` },
      { at: 0.5, label: "0" },
      { at: 1, label: `≥${label(v)}` },
    ],
  };
}

/** The attribution colours of a theme: the context-gain palette (one rule for both). */
export function attributionPalette(theme) {
  return modePalette("context_gain", theme);
}

/**
 * What the legend shows for a mode: {title, kind, ticks|buckets}.
 * ticks: [{at (0..1 along the bar), label}]; buckets: [{bin, label}].
 */
export function legendFor(mode, unit = "bits", labels = null) {
  const nats = unit === "nats";
  const scale = (title, maxBits) => ({
    title: `${title} (${nats ? "nats" : "bits"})`,
    kind: "continuous",
    ticks: [0, 0.25, 0.5, 0.75, 1].map((f) => {
      const v = f * (nats ? maxBits * LN2 : maxBits);
      const label = nats ? String(Math.round(v * 10) / 10) : String(v);
      return { at: f, label: f === 1 ? `≥${label}` : label };
    }),
  });
  switch (mode) {
    case "context_gain": {
      const max = nats ? Math.round(GAIN_MAX_BITS * LN2 * 10) / 10 : GAIN_MAX_BITS;
      return {
        title: `context gain (${nats ? "nats" : "bits"}): blue = context hurt, orange = helped`,
        kind: "continuous",
        bins: GAIN_BINS,
        ticks: [
          { at: 0, label: `≤−${max}` },
          { at: 0.25, label: `−${max / 2}` },
          { at: 0.5, label: "0" },
          { at: 0.75, label: `${max / 2}` },
          { at: 1, label: `≥${max}` },
        ],
      };
    }
    case "kl": {
      // tick labels at the decades, in the unit shown
      const f = nats ? 1 : 1 / LN2;
      const label = (v) => String(Number((v * f).toPrecision(2)));
      return {
        title: `KL(base ‖ other) (${nats ? "nats" : "bits"}, log scale)`,
        kind: "continuous",
        ticks: [0, 1, 2, 3, 4].map((k) => {
          const v = KL_MIN_NATS * 10 ** ((k / 4) * KL_DECADES);
          return { at: k / 4, label: k === 0 ? `≤${label(v)}` : k === 4 ? `≥${label(v)}` : label(v) };
        }),
      };
    }
    case "probability":
      return {
        title: "probability",
        kind: "continuous",
        ticks: [1, 0.75, 0.5, 0.25, 0].map((p) => ({ at: 1 - p, label: String(p) })),
      };
    case "rank":
      return {
        title: "rank",
        kind: "buckets",
        buckets: RANK_BUCKETS.map((b, k) => ({ bin: RANK_BINS[k], label: b.label })),
      };
    case "entropy":
      return scale("entropy", ENTROPY_MAX_BITS);
    default:
      // a PLL result's (objective.js): pseudo-surprisal
      return scale(labels && labels.pseudo ? labels.surprisal : "surprisal", SURPRISAL_MAX_BITS);
  }
}
