// Mirror of ppl_widget/views/protocol.py: change both together.
// test/protocol.test.js parses the Python file and fails when they drift.

export const MSG_RESET = "reset";
export const MSG_CHUNK = "chunk";
export const MSG_DONE = "done";
export const MSG_ERROR = "error";
export const MSG_LOADING = "loading"; // {message, fraction}: a first-time model preparation
export const MSG_SETTINGS_ERROR = "settings_error"; // {field, message}: a control rejected
export const MSG_CANCEL = "cancel";
export const MSG_REPLAY = "replay";
// Why is this token surprising (an explanation of one target; see protocol.py)
export const MSG_EXPLAIN = "explain"; // front end -> kernel: {token} or {word}, method
export const MSG_EXPLAIN_CANCEL = "explain_cancel"; // stop computing; what is done stays
export const MSG_EXPLAIN_CLEAR = "explain_clear"; // stop and forget (the view closed it)
export const MSG_EXPLAIN_START = "explain_start"; // {explain_id, target, unit, method}
export const MSG_EXPLAIN_PART = "explain_part"; // {explain_id, units?, index, delta_nats, done, total}
export const MSG_EXPLAIN_DONE = "explain_done"; // {explain_id, status}; the trait holds it whole
export const MSG_EXPLAIN_ERROR = "explain_error"; // {explain_id, message}
export const EXPLAIN_METHODS = Object.freeze(["occlusion", "gradient"]);

// [name, dtype, values per token; 0 means top_k values per token]
// Every buffer of a chunk message follows this order; result_data uses the
// same names as keys.
export const CHUNK_FIELDS = Object.freeze([
  ["token_ids", "<i4", 1],
  ["start16", "<i4", 1],
  ["end16", "<i4", 1],
  ["surprisal", "<f4", 1], // nats
  ["entropy", "<f4", 1], // nats
  ["rank", "<i4", 1], // 1 = the model's top choice
  ["context_length", "<i4", 1],
  ["units", "<i4", 3], // words, chars, bytes attributed to this token
  ["topk_ids", "<i4", 0],
  ["topk_probs", "<f4", 0],
  ["word", "<i4", 1], // the token's word (core.levels rule), -1: none
  ["sentence", "<i4", 1], // its sentence, -1: none
  ["bow_prob", "<f4", 1], // b(i), NaN when not computed
  ["context_gain", "<f4", 1], // nats; NaN without a unigram
]);

// Unit spans (UTF-16), the reset message's buffers in this order; result_data keys.
// Per-token fields result_data leaves out when every token has this "absent" value
// (chunk messages always carry them); decode.decodeResult fills them back in.
export const OPTIONAL_FIELDS = Object.freeze({ word: -1, sentence: -1, bow_prob: NaN, context_gain: NaN });

// A divergence view (DivergenceResult.widget()): result_data.divergence holds
// {labels: [base, other], <field>: buffer} per field, the base model's being the usual
// fields; decode.decodeResult reads them into res.divergence.
export const DIVERGENCE_FIELDS = Object.freeze([
  ["kl", "<f4", 1], // KL(base ‖ other), nats
  ["same_top", "<i4", 1], // 1: the two most probable tokens agree
  ["other_surprisal", "<f4", 1], // nats
  ["other_entropy", "<f4", 1], // nats
  ["other_rank", "<i4", 1],
  ["other_topk_ids", "<i4", 0],
  ["other_topk_probs", "<f4", 0],
]);

export const UNIT_SPAN_FIELDS = Object.freeze(["word_start16", "word_end16", "sentence_start16", "sentence_end16"]);
export const LEVELS = Object.freeze(["token", "word", "sentence"]);
export const SURPRISAL_UNITS = Object.freeze(["bits", "nats"]);

// Index of each unit inside the per-token `units` triple.
export const UNIT_WORDS = 0;
export const UNIT_CHARS = 1;
export const UNIT_BYTES = 2;

// Synced traits the front end reads (and, for the controls, writes).
export const TRAIT_TEXT = "text";
export const TRAIT_STATUS = "status";
export const TRAIT_ERROR = "error";
export const TRAIT_SETTINGS = "settings";
export const TRAIT_MAX_LENGTH = "max_length";
export const TRAIT_STRIDE = "stride";
export const TRAIT_PREFIX = "prefix";
export const TRAIT_PREFIX_EVERY_WINDOW = "prefix_every_window";
export const TRAIT_RESULT = "result_data";
export const TRAIT_COLOR_MODE = "color_mode"; // optional
export const TRAIT_SHOW_BOUNDARIES = "show_boundaries"; // optional
export const TRAIT_LEVEL = "level"; // optional: token | word | sentence
export const TRAIT_SURPRISAL_UNIT = "surprisal_unit"; // optional: bits | nats
export const TRAIT_BOW = "bow_correction"; // optional: word tooltips show the corrected value
export const TRAIT_EXPLANATION = "explanation"; // optional: the explanation shown (or null)
export const TRAIT_EDITABLE = "editable"; // optional: a text box above the view re-scores as you type

export const STATUS_IDLE = "idle";
export const STATUS_LOADING = "loading"; // the model is being loaded
export const STATUS_SCORING = "scoring";
export const STATUS_DONE = "done";
export const STATUS_CANCELLED = "cancelled";
export const STATUS_ERROR = "error";

export const PREFIX_CHOICES = Object.freeze(["bos", "none"]);

// Keys of ScoreResult.metrics() (NaN may arrive as null).
export const METRIC_KEYS = Object.freeze([
  "total_nll",
  "total_bits",
  "n_tokens",
  "n_words",
  "n_chars",
  "n_bytes",
  "token_ppl",
  "word_ppl",
  "char_ppl",
  "byte_ppl",
  "bits_per_token",
  "bits_per_char",
  "bits_per_byte",
]);
