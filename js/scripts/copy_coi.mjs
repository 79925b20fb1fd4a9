// After `npm run build`: coi-serviceworker (github.com/gzuidhof/coi-serviceworker, MIT), the
// service worker that gives a live page cross-origin isolation on a host that sends no
// COOP/COEP headers (GitHub Pages): export_live_page copies it into the page's folder, so
// onnxruntime-web gets SharedArrayBuffer and its threads with nothing fetched from elsewhere.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const from = join(here, "..", "node_modules", "coi-serviceworker", "coi-serviceworker.min.js");
const out = join(here, "..", "..", "ppl_widget", "static");
mkdirSync(out, { recursive: true });
copyFileSync(from, join(out, "coi-serviceworker.js"));
// its policy on this page: register at once, reload only when a transformer needs threads
copyFileSync(join(here, "..", "src", "live", "coi_on_demand.js"), join(out, "coi-on-demand.js"));
