// The one interface between the live page's worker and a model kind (n-gram, ONNX, ...).
// The worker (worker.js, run.js) uses nothing else of a model; models/index.js maps the
// manifest's `kind` to the module that loads it.
//
// A model module exports:
//   async function load(entry, baseUrl, fetchFn) -> Model
//     entry   the manifest's model object {name, kind, files: {role: path}, settings}
//     baseUrl the URL of the page's folder (files are fetched relative to it)
//     fetchFn the worker's fetch, for files of the page's folder only (or a stand-in in
//             tests); a file that cannot be fetched is an Error whose message names it
//
// Model: {
//   name: string, kind: string,
//   maxLength: number,            the default window length (settings.max_length)
//   contextLength?: number|null,  the most a window may hold; undefined: maxLength,
//                                 null: no limit (an n-gram reads order - 1 symbols back)
//   vocabSize: number,            outcomes a distribution is over (rank's last value)
//   prefixId: number|null,        BOS / prefix token id, null if none (then EOS stands in)
//   eosId: number|null,
//   prefixEveryWindow?: boolean,   false: the kind refuses prefix_every_window (n-gram)
//   dtype?: string,               what its numbers are computed in ("Scored with")
//   tokenize(text) -> {ids: Int32Array, offsets: Int32Array}
//       no special tokens added; offsets: 2 per token, [start, end) in UTF-16 code units
//       of text, as the tokenizer gives them (run.js tiles them: partition_offsets)
//   decode(id) -> string          a token's text, for tooltips and top-k
//   async scoreWindow(inputIds, nTargets, topK, targetIds) -> Scores
//       inputIds: Int32Array, the window's inputs (core/windows.py Window: positions
//         [input_start, input_end), the prefix token first when the window is prefixed);
//       targetIds: Int32Array(nTargets), the ids of the window's targets: the tokens that
//         FOLLOW the last nTargets inputs (target_end == input_end + 1), so the last target
//         is not among the inputs.  Row i is the prediction made after reading
//         inputIds[0 .. L - nTargets + i] (L = inputIds.length), i.e. the logits at input
//         position L - nTargets + i, scored at targetIds[i];
//         targetIds[i] == inputIds[L - nTargets + i + 1] for i < nTargets - 1.
//       Scores: {surprisal: Float64Array (nats), entropy: Float64Array (nats),
//                rank: Int32Array (1 = top choice), topkIds: Int32Array(nTargets * k),
//                topkProbs: Float32Array(nTargets * k), k = min(topK, vocabSize),
//                contextLength?: Int32Array (positions each row read; default: all of
//                the window before it, L - nTargets + i + 1)}
//   Optional, for a model with a key/value cache (a transformer); run.js then runs a window
//   in pieces and an edit from its first changed token:
//   async scorePiece(newIds, past, nTargets, topK, targetIds) -> {scores, past}
//       the next inputs of a window over `past` (what scorePiece gave for the window's
//       inputs before them; null at the window's start): rows as scoreWindow's over the
//       window so far; `past` is opaque to run.js, holding the window's inputs so far
//   truncatePast(past, n) -> past      the cache of the window's first n inputs only
// }

const MODEL_FIELDS = [
  ["name", "string"],
  ["kind", "string"],
  ["maxLength", "number"],
  ["vocabSize", "number"],
  ["tokenize", "function"],
  ["decode", "function"],
  ["scoreWindow", "function"],
];

/** The model, or an Error naming what it lacks. */
export function checkModel(model, label = "model") {
  if (!model || typeof model !== "object") throw new Error(`${label}: load() gave no model object`);
  for (const [key, type] of MODEL_FIELDS) {
    if (typeof model[key] !== type) throw new Error(`${label}: ${key} must be a ${type}, got ${typeof model[key]}`);
  }
  for (const key of ["prefixId", "eosId"]) {
    if (!(model[key] === null || Number.isInteger(model[key]))) throw new Error(`${label}: ${key} must be a token id or null`);
  }
  if (!(model.maxLength >= 1)) throw new Error(`${label}: maxLength must be at least 1`);
  return model;
}

/** tokenize()'s result, or an Error saying how it breaks the interface. */
export function checkTokens(tokens, text, label = "model") {
  const { ids, offsets } = tokens || {};
  if (!(ids instanceof Int32Array) || !(offsets instanceof Int32Array)) {
    throw new Error(`${label}: tokenize() must give {ids: Int32Array, offsets: Int32Array}`);
  }
  if (offsets.length !== 2 * ids.length) throw new Error(`${label}: tokenize() gave ${ids.length} ids and ${offsets.length} offsets (2 per token)`);
  for (const o of offsets) if (o < 0 || o > text.length) throw new Error(`${label}: an offset (${o}) lies outside the text (0 .. ${text.length})`);
  return tokens;
}

/** scoreWindow()'s result, or an Error saying which array has the wrong type or size. */
export function checkScores(scores, nTargets, k, label = "model") {
  const want = [
    ["surprisal", Float64Array, nTargets],
    ["entropy", Float64Array, nTargets],
    ["rank", Int32Array, nTargets],
    ["topkIds", Int32Array, nTargets * k],
    ["topkProbs", Float32Array, nTargets * k],
  ];
  for (const [key, Ctor, n] of want) {
    const v = scores && scores[key];
    if (!(v instanceof Ctor) || v.length !== n) {
      throw new Error(`${label}: scoreWindow() must give ${key} as a ${Ctor.name} of ${n}, got ${v ? `${v.constructor.name} of ${v.length}` : v}`);
    }
  }
  const c = scores.contextLength;
  if (c != null && (!(c instanceof Int32Array) || c.length !== nTargets)) {
    throw new Error(`${label}: scoreWindow()'s contextLength must be an Int32Array of ${nTargets}`);
  }
  return scores;
}
