// The surprisal unit every view offers (bits or nats): its picker and its numbers.  The
// kernel sends nats; a view converts only for display (levels.inUnit).

import { h } from "./dom.js";
import { fmtSigned } from "./format.js";
import { inUnit } from "./levels.js";

export const UNITS = Object.freeze(["bits", "nats"]);

/** A unit the views know ("bits" for anything else). */
export function asUnit(u) {
  return u === "nats" ? "nats" : "bits";
}

/** The unit picker: a <select> of UNITS (class cls), set to unit. */
export function unitSelect(cls, unit = "bits") {
  const el = h("select", { class: `pplw-input ${cls}`, attrs: { "aria-label": "surprisal unit" } }, ...UNITS.map((u) => h("option", { text: u, attrs: { value: u } })));
  el.value = asUnit(unit);
  return el;
}

/** A difference of nats in the unit shown, signed: "+1.23" / "−0.50" / "—". */
export function fmtDelta(nats, unit, digits = 2) {
  return typeof nats === "number" && Number.isFinite(nats) ? fmtSigned(inUnit(nats, unit), digits) : "—";
}
