// Run by tests/test_live_tokenizer.py: tokenizes each text with js/src/live/tokenizer.js and
// prints, as JSON, every case whose ids or UTF-16 offsets differ from Python's.
// usage: node tests/live_tokenizer_check.mjs cases.json  (a list of {tokenizer, texts, ids, offsets})
import { readFileSync } from "node:fs";
import { loadTokenizer } from "../js/src/live/tokenizer.js";

const suites = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const report = [];
for (const suite of suites) {
  const tok = loadTokenizer(JSON.parse(readFileSync(suite.tokenizer, "utf-8")));
  let checked = 0;
  const bad = [];
  suite.texts.forEach((text, i) => {
    const { ids, offsets } = tok.encode(text);
    const same = (a, b) => a.length === b.length && a.every((x, k) => x === b[k]);
    checked++;
    if (!same([...ids], suite.ids[i]) || !same([...offsets], suite.offsets[i])) {
      bad.push({ text, ids: [...ids], expected_ids: suite.ids[i],
                 offsets: [...offsets], expected_offsets: suite.offsets[i] });
    }
  });
  const decoded = suite.decode_ids.map((id) => tok.decode(id));
  const badDecode = decoded.map((d, k) => [suite.decode_ids[k], d, suite.decoded[k]])
    .filter(([, d, e]) => d !== e);
  report.push({ name: suite.name, checked, mismatches: bad, decode_mismatches: badDecode });
}
console.log(JSON.stringify(report));
