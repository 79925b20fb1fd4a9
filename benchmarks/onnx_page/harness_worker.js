// The benchmark's stand-in for the live page's worker (bench_onnx_page.py bundles it):
// loads one ONNX model with js/src/live/models/onnx.js, tokenizes the text and scores
// the windows Python planned, timing each step.
import { load } from "../../js/src/live/models/onnx.js";

self.onmessage = async (ev) => {
  const { entry, baseUrl, text, windows, topK } = ev.data;
  try {
    const t0 = performance.now();
    const model = await load(entry, baseUrl, (u) => fetch(u));
    const tLoad = performance.now();
    const tokens = model.tokenize(text);
    const seq = Int32Array.from([...(model.prefixId === null ? [] : [model.prefixId]), ...tokens.ids]);
    const tTok = performance.now();
    const surprisal = [], windowMs = [];
    for (const [inStart, inEnd, tStart, tEnd] of windows) {
      const w0 = performance.now();
      const s = await model.scoreWindow(seq.subarray(inStart, inEnd), tEnd - tStart, topK, seq.subarray(tStart, tEnd));
      windowMs.push(performance.now() - w0);
      surprisal.push(...s.surprisal);
    }
    // a second run of the same text: what an edit costs once the model is loaded
    const r0 = performance.now();
    const again = model.tokenize(text);
    const [inStart, inEnd, tStart, tEnd] = windows[0];
    const seq2 = Int32Array.from([...(model.prefixId === null ? [] : [model.prefixId]), ...again.ids]);
    await model.scoreWindow(seq2.subarray(inStart, inEnd), tEnd - tStart, topK, seq2.subarray(tStart, tEnd));
    const warmFirst = performance.now() - r0;
    self.postMessage({ ok: true, ids: [...tokens.ids], offsets: [...tokens.offsets], surprisal,
      device: model.device, dtype: model.dtype, threads: self.crossOriginIsolated,
      loadMs: tLoad - t0, tokenizeMs: tTok - tLoad, windowMs, warmFirstMs: warmFirst });
  } catch (err) {
    self.postMessage({ ok: false, error: String((err && err.stack) || err) });
  }
};
