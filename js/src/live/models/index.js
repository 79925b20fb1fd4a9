// The model kinds the live page knows: the manifest's `kind` -> the module that loads it
// (model_api.js's interface).  A new kind adds one line here.
import * as ngram from "./ngram.js";
import * as onnx from "./onnx.js";

export const KINDS = {
  ngram,
  onnx,
};

/** The module for a manifest entry's kind, or an Error naming the kinds there are. */
export function moduleFor(kind) {
  const mod = Object.prototype.hasOwnProperty.call(KINDS, kind) ? KINDS[kind] : null;
  if (!mod) throw new Error(`no model kind "${kind}" in this page (it knows ${Object.keys(KINDS).join(", ")})`);
  return mod;
}

export { loadsOnDemand } from "./on_demand.js";
