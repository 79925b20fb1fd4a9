// After `npm run build`: onnxruntime-web's runtime files, as the live page serves them
// beside an ONNX model (ppl_widget/scoring/kinds/onnx/onnx_files.py copies them into the page):
// the WASM build (SIMD, threads where the page is cross-origin isolated) and the WebGPU
// build, each an ES module and its .wasm, loaded from the page's own folder (no CDN).
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "..", "node_modules", "onnxruntime-web", "dist");
const out = join(here, "..", "..", "ppl_widget", "static", "ort");
export const ORT_FILES = [
  "ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm",
  "ort.webgpu.min.mjs", "ort-wasm-simd-threaded.asyncify.mjs", "ort-wasm-simd-threaded.asyncify.wasm",
];
mkdirSync(out, { recursive: true });
for (const f of ORT_FILES) copyFileSync(join(dist, f), join(out, f));
