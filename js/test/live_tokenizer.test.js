// The live page's tokenizer on hand-made tokenizer.json files: pattern translation, byte-level
// offsets of a character split over several tokens, Metaspace's mark, special-token strings
// as text.  (Against Python's tokenizers on real vocabularies: tests/test_live_tokenizer.py.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadTokenizer } from "../src/live/tokenizer.js";
import { compileRegex } from "../src/live/tokenizer_regex.js";

test("Oniguruma's \\s and (?i:...) in a JavaScript RegExp", () => {
  const ws = compileRegex("\\s+");
  assert.deepEqual("a\u0085b\ufeffc".split(ws), ["a", "b\ufeffc"]); // NEL is space, BOM is not
  const re = compileRegex("(?i:'s|'ll)|[^\\s\\p{L}]+|\\p{L}+");
  assert.deepEqual([..."IT'S WE'LL é!".matchAll(re)].map((m) => m[0]), ["IT", "'S", "WE", "'LL", "é", "!"]);
});

function byteLevelSpec(vocab, merges) {
  return { normalizer: null, added_tokens: [{ id: 0, content: "<|x|>", special: true }],
           pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, use_regex: true },
           decoder: { type: "ByteLevel" }, model: { type: "BPE", vocab, merges } };
}

test("byte-level: a character over two tokens gives both its UTF-16 span", () => {
  // "é" is bytes C3 A9, shown as "Ã" and "©"; "🙂" (two UTF-16 units) is F0 9F 99 82
  const chars = ["Ã", "©", "ð", "Ł", "Ļ", "Ĥ", "a", "Ġ"];
  const vocab = Object.fromEntries(chars.map((c, i) => [c, i + 1]));
  vocab["ðŁ"] = 20;
  const tok = loadTokenizer(byteLevelSpec(vocab, ["ð Ł"]));
  const { ids, offsets } = tok.encode("é🙂a");
  assert.deepEqual([...ids], [1, 2, 20, 5, 6, 7]);
  assert.deepEqual([...offsets], [0, 1, 0, 1, 1, 3, 1, 3, 1, 3, 3, 4]);
  assert.equal(tok.decode(7), "a");
  assert.equal(tok.decode(1), "\ufffd"); // a lone byte of a character
});

test("special-token strings are text, as with split_special_tokens=True", () => {
  const chars = ["<", "|", "x", ">"];
  const vocab = Object.fromEntries(chars.map((c, i) => [c, i + 1]));
  const tok = loadTokenizer(byteLevelSpec(vocab, []));
  assert.deepEqual([...tok.encode("<|x|>").ids], [1, 2, 3, 2, 4]);
});

test("Metaspace: the mark put in front spans the first character", () => {
  const vocab = { "<unk>": 0, "\u2581": 1, "a": 2, "b": 3, "\u2581a": 4 };
  const tok = loadTokenizer({ normalizer: null, added_tokens: [],
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true },
    decoder: { type: "Metaspace", prepend_scheme: "always" },
    model: { type: "BPE", vocab, merges: [["\u2581", "a"]], unk_token: "<unk>" } });
  const { ids, offsets } = tok.encode("ab a?");
  assert.deepEqual([...ids], [4, 3, 4, 0]);
  assert.deepEqual([...offsets], [0, 1, 1, 2, 2, 4, 4, 5]);
  assert.equal(tok.decode(4), "a"); // the decoder drops a first token's mark
});

test("parts the page cannot run are refused by name", () => {
  assert.throws(() => loadTokenizer({ normalizer: { type: "NFKC" }, model: { type: "BPE", vocab: {}, merges: [] } }), /normalizer NFKC/);
  assert.throws(() => loadTokenizer({ normalizer: null, model: { type: "WordPiece" } }), /model WordPiece/);
});
