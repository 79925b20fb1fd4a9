// A transformer in the browser: the ONNX graph of ppl_widget/scoring/kinds/onnx/onnx_export.py (a
// piece of a window's ids, its targets' ids and the window's key/value cache so far in;
// each target's surprisal, entropy, rank and top-k and the longer cache out) run by
// onnxruntime-web, and the model's tokenizer.json read by ../tokenizer.js.
// The interface is model_api.js's.  onnxruntime-web is not bundled: its ES module and
// .wasm are files of the page (entry.files.ort_*), imported from the page's folder, so
// nothing is fetched from elsewhere: the WebGPU build where the browser has WebGPU, else
// the WASM build (SIMD; threads where the page is cross-origin isolated).
import { loadTokenizer } from "../tokenizer.js";

const dirOf = (url) => url.slice(0, url.lastIndexOf("/") + 1);

async function fetchOk(fetchFn, url, what) {
  let res;
  try {
    res = await fetchFn(url);
  } catch (err) {
    throw new Error(`could not fetch ${what} (${url}): ${(err && err.message) || err}`);
  }
  if (!res.ok) throw new Error(`could not fetch ${what} (${url}): HTTP ${res.status}`);
  return res;
}

/** A WebGPU adapter on real hardware: a software one (SwiftShader, a "fallback adapter",
 * as headless Chromium offers without a GPU) runs slower than the WASM build. */
async function hasWebGpu() {
  if (typeof navigator === "undefined" || !navigator.gpu) return false;
  try {
    const adapter = await navigator.gpu.requestAdapter();
    return !!adapter && !adapter.isFallbackAdapter && !(adapter.info && adapter.info.isFallbackAdapter);
  } catch (err) {
    return false;
  }
}

/** onnxruntime-web from the page's folder, the build for this browser, set up. */
async function loadRuntime(entry, baseUrl, useGpu) {
  const file = useGpu ? entry.files.ort_webgpu : entry.files.ort_wasm;
  if (!file) throw new Error(`model "${entry.name}": the manifest names no onnxruntime-web file`);
  const url = new URL(file, baseUrl).href;
  const ort = await import(/* @vite-ignore */ url);
  ort.env.wasm.wasmPaths = dirOf(url); // the .mjs glue and .wasm beside it
  const isolated = typeof self !== "undefined" && self.crossOriginIsolated;
  const cores = (typeof navigator !== "undefined" && navigator.hardwareConcurrency) || 1;
  // every core where the page is cross-origin isolated (the host's COOP/COEP headers, or
  // the page's coi-serviceworker): threads need SharedArrayBuffer
  ort.env.wasm.numThreads = isolated ? cores : 1;
  ort.env.wasm.proxy = false; // already off the page's thread, in the worker
  ort.env.logLevel = "error"; // not its start-up warnings (an unknown CPU vendor) in the console
  return ort;
}

function int64(ort, ids) {
  const out = new BigInt64Array(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = BigInt(ids[i]);
  return new ort.Tensor("int64", out, [1, ids.length]);
}

export async function load(entry, baseUrl, fetchFn = fetch) {
  const settings = entry.settings || {};
  const files = entry.files || {};
  for (const role of ["model", "tokenizer"]) {
    if (!files[role]) throw new Error(`model "${entry.name}": the manifest names no ${role} file`);
  }
  const urlOf = (f) => new URL(f, baseUrl).href;
  const [spec, bytes] = await Promise.all([
    fetchOk(fetchFn, urlOf(files.tokenizer), "the tokenizer").then((r) => r.json()),
    fetchOk(fetchFn, urlOf(files.model), "the ONNX model").then((r) => r.arrayBuffer()),
  ]);
  const tokenizer = loadTokenizer(spec);
  let ort, session, device = "wasm";
  const wantGpu = settings.webgpu !== false && !!files.ort_webgpu && (await hasWebGpu());
  if (wantGpu) {
    try {
      ort = await loadRuntime(entry, baseUrl, true);
      // WebGPU, and WASM in the same build for what WebGPU lacks
      session = await ort.InferenceSession.create(new Uint8Array(bytes), { executionProviders: ["webgpu", "wasm"] });
      device = "webgpu";
    } catch (err) {
      session = null; // no adapter, an op WebGPU lacks: the WASM build below
    }
  }
  if (!session) {
    ort = await loadRuntime(entry, baseUrl, false);
    session = await ort.InferenceSession.create(new Uint8Array(bytes), {
      executionProviders: ["wasm"], graphOptimizationLevel: "all",
    });
  }
  const graphTopK = settings.graph_top_k ?? 0;
  const vocabSize = settings.vocab_size;

  // the key/value cache (graph version 2): past_* in, present_* out, (1, heads, n, dim)
  const pastNames = session.inputNames.filter((n) => n.startsWith("past_"));
  const kv = settings.kv_cache;
  const emptyPast = () => ({ length: 0, tensors: pastNames.map(() => new ort.Tensor("float32", new Float32Array(0), [1, kv.heads, 0, kv.head_dim])) });

  async function scorePiece(newIds, past, nTargets, topK, targetIds) {
    if (!targetIds || targetIds.length !== nTargets) {
      throw new Error(`model "${entry.name}": scorePiece needs the ${nTargets} target ids (the last one follows the inputs)`);
    }
    const k = Math.min(topK, vocabSize);
    if (k > graphTopK) {
      throw new Error(`model "${entry.name}" was exported with ${graphTopK} alternatives per token; top_k=${topK} asks for more (export_onnx_model(..., top_k=${topK}))`);
    }
    const feeds = { input_ids: int64(ort, newIds), target_ids: int64(ort, targetIds) };
    const cache = pastNames.length ? past || emptyPast() : null;
    pastNames.forEach((n, i) => (feeds[n] = cache.tensors[i]));
    const out = await session.run(feeds);
    const rows = out.surprisal.data.length;
    if (rows !== nTargets) throw new Error(`model "${entry.name}": the graph gave ${rows} rows for ${nTargets} targets`);
    const topkIds = new Int32Array(nTargets * k);
    const topkProbs = new Float32Array(nTargets * k);
    const ids = out.topk_ids.data, probs = out.topk_probs.data;
    for (let r = 0; r < nTargets; r++) {
      for (let j = 0; j < k; j++) {
        topkIds[r * k + j] = Number(ids[r * graphTopK + j]);
        topkProbs[r * k + j] = probs[r * graphTopK + j];
      }
    }
    const scores = {
      surprisal: Float64Array.from(out.surprisal.data),
      entropy: Float64Array.from(out.entropy.data),
      rank: Int32Array.from(out.rank.data, Number),
      topkIds, topkProbs,
    };
    const present = pastNames.map((n) => out[n.replace("past_", "present_")]);
    for (const [name, t] of Object.entries(out)) if (!name.startsWith("present_")) t.dispose?.();
    return { scores, past: cache ? { length: cache.length + newIds.length, tensors: present } : null };
  }

  /** The cache of its first n positions (a window's unchanged start). */
  function truncatePast(past, n) {
    const tensors = past.tensors.map((t) => {
      const [, heads, len, dim] = t.dims;
      const data = new Float32Array(heads * n * dim);
      for (let h = 0; h < heads; h++) data.set(t.data.subarray(h * len * dim, h * len * dim + n * dim), h * n * dim);
      return new ort.Tensor("float32", data, [1, heads, n, dim]);
    });
    return { length: n, tensors };
  }

  const scoreWindow = async (inputIds, nTargets, topK, targetIds) => (await scorePiece(inputIds, null, nTargets, topK, targetIds)).scores;
  // a page exported before the cache (graph version 1) runs whole windows
  const withCache = pastNames.length && kv ? { scorePiece, truncatePast } : {};

  return {
    name: entry.name,
    kind: "onnx",
    maxLength: settings.max_length,
    contextLength: settings.context_length ?? settings.max_length,
    vocabSize,
    prefixId: settings.prefix_id ?? null,
    eosId: settings.eos_id ?? null,
    dtype: `${settings.variant ?? "fp32"} (onnxruntime-web, ${device})`,
    device,
    tokenize: (text) => tokenizer.encode(text),
    decode: (id) => tokenizer.decode(id),
    scoreWindow,
    ...withCache,
  };
}
