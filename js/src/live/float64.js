// The float64 primitives the n-gram scorer needs to give Python's numbers in the browser:
// a correctly rounded natural log (Python's math.log and numpy's log call the C library's,
// which glibc rounds correctly on all but about 1 in 3,000 arguments; V8's Math.log is off
// by one unit in the last place on about 1 in 16), and numpy's pairwise summation (the
// order np.sum adds a float64 array in, so an entropy sums to the same bits).

// ---- double-double arithmetic: a value is hi + lo, |lo| <= half an ulp of hi ----------
const SPLITTER = 134217729; // 2^27 + 1 (Veltkamp)

function twoSum(a, b) {
  const s = a + b;
  const bb = s - a;
  return [s, a - (s - bb) + (b - bb)];
}

function quick(s, e) {
  const hi = s + e;
  return [hi, e - (hi - s)];
}

function twoProd(a, b) {
  const p = a * b;
  let c = SPLITTER * a;
  const ah = c - (c - a);
  const al = a - ah;
  c = SPLITTER * b;
  const bh = c - (c - b);
  const bl = b - bh;
  return [p, ah * bh - p + ah * bl + al * bh + al * bl];
}

function add(x, y) {
  const [s, e] = twoSum(x[0], y[0]);
  const [t, f] = twoSum(x[1], y[1]);
  const [s2, e2] = quick(s, e + t);
  return quick(s2, e2 + f);
}

function mul(x, y) {
  const [p, e] = twoProd(x[0], y[0]);
  return quick(p, e + (x[0] * y[1] + x[1] * y[0]));
}

function div(x, y) {
  const q1 = x[0] / y[0];
  let r = add(x, mul([-q1, 0], y));
  const q2 = r[0] / y[0];
  r = add(r, mul([-q2, 0], y));
  const q3 = r[0] / y[0];
  return add(quick(q1, q2), [q3, 0]);
}

// ln 2 to about 107 bits, and 1/(2k+1) for the atanh series
const LN2 = [0.6931471805599453, 2.3190468138462996e-17];
const TERMS = 23; // s^2 <= 0.0295: 23 terms leave less than 2^-110
const INV_ODD = Array.from({ length: TERMS }, (_, k) => div([1, 0], [2 * k + 1, 0]));
const SQRT2 = Math.SQRT2;
const bits = new DataView(new ArrayBuffer(8));

/** ln(m) for m in [1/sqrt2, 2] in double-double: 2 atanh((m-1)/(m+1)) summed in full
 * (slow: it makes the table below once). */
function lnSeries(m) {
  let e = 0;
  if (m > SQRT2) {
    m /= 2;
    e = 1;
  }
  const s = div([m - 1, 0], twoSum(m, 1)); // m - 1 is exact here
  const s2 = mul(s, s);
  let p = INV_ODD[TERMS - 1];
  for (let k = TERMS - 2; k >= 0; k--) p = add(mul(p, s2), INV_ODD[k]);
  const lnM = mul(s, p);
  return add(mul([e, 0], LN2), [2 * lnM[0], 2 * lnM[1]]);
}

// m in [0.75, 1.5) falls in one of 193 intervals of width 1/256 centred on c_j (multiples
// of 2^-9, 1 among them: no cancellation next to 1), and ln m = ln c_j + 2 atanh(s),
// s = (m - c_j)/(m + c_j), |s| < 2^-10: a few terms.
const GRID = 0.75 - 1 / 512;
const CENTRES = Float64Array.from({ length: 193 }, (_, j) => GRID + (j + 0.5) / 256);
const LN_CENTRES = Array.from(CENTRES, (c) => (c === 1 ? [0, 0] : lnSeries(c)));
const THIRD = INV_ODD[1];

/**
 * ln(x), correctly rounded (to nearest) but for arguments within about 2^-95 of a
 * rounding midpoint: x = 2^e m, ln x = e ln 2 + ln c + 2 atanh(s) in double-double.
 */
export function log(x) {
  if (!(x > 0)) return x === 0 ? -Infinity : NaN;
  if (x === Infinity) return Infinity;
  if (x === 1) return 0;
  let scale = 0;
  if (x < 2.2250738585072014e-308) {
    x *= 18014398509481984; // 2^54: a subnormal made normal
    scale = -54;
  }
  bits.setFloat64(0, x);
  const hiWord = bits.getUint32(0);
  let e = ((hiWord >>> 20) & 0x7ff) - 1023 + scale;
  bits.setUint32(0, (hiWord & 0x800fffff) | 0x3ff00000); // exponent 0: m in [1, 2)
  let m = bits.getFloat64(0);
  if (m >= 1.5) {
    m /= 2;
    e += 1;
  }
  const j = Math.floor((m - GRID) * 256);
  const c = CENTRES[j];
  const s = div([m - c, 0], twoSum(m, c)); // m - c is exact (Sterbenz)
  const s2 = mul(s, s);
  const h = s2[0];
  const tail = h * h * (1 / 5 + h * (1 / 7 + h * (1 / 9 + h * (1 / 11 + h / 13))));
  const t = add(mul(s2, THIRD), [tail, 0]); // s^2/3 + s^4/5 + ...
  const half = add(s, mul(s, t)); // atanh(s)
  const r = add(add(mul([e, 0], LN2), LN_CENTRES[j]), [2 * half[0], 2 * half[1]]);
  return r[0] + r[1];
}

/** The sum of a[0 .. n) in numpy's pairwise order (np.add.reduce of a float64 array). */
export function pairwiseSum(a, from = 0, n = a.length - from) {
  if (n < 8) {
    let res = 0;
    for (let i = 0; i < n; i++) res += a[from + i];
    return res;
  }
  if (n <= 128) {
    let r0 = a[from], r1 = a[from + 1], r2 = a[from + 2], r3 = a[from + 3];
    let r4 = a[from + 4], r5 = a[from + 5], r6 = a[from + 6], r7 = a[from + 7];
    let i = 8;
    for (; i < n - (n % 8); i += 8) {
      const j = from + i;
      r0 += a[j];
      r1 += a[j + 1];
      r2 += a[j + 2];
      r3 += a[j + 3];
      r4 += a[j + 4];
      r5 += a[j + 5];
      r6 += a[j + 6];
      r7 += a[j + 7];
    }
    let res = r0 + r1 + (r2 + r3) + (r4 + r5 + (r6 + r7));
    for (; i < n; i++) res += a[from + i];
    return res;
  }
  let n2 = Math.floor(n / 2);
  n2 -= n2 % 8;
  return pairwiseSum(a, from, n2) + pairwiseSum(a, from + n2, n - n2);
}
