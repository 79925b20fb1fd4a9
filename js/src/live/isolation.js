// Threads for onnxruntime-web need cross-origin isolation. On a static host it comes from
// coi-serviceworker's worker, which coi_on_demand.js registers on the first visit without
// reloading. A page about to load a transformer while not isolated reloads its top
// document once (the page itself, or the course page around its frame), keeping what the
// reader did in sessionStorage; the n-gram never waits for that reload.

const TRIED = "pplv-isolation-reload"; // one try per tab: a refused worker must not loop
const stateKey = () => `pplv-state:${location.pathname}`;

/** The window whose reload isolates this page: the top one, when it is of this origin. */
function topWindow() {
  try {
    return window.top && window.top.location.href ? window.top : null;
  } catch {
    return null; // a frame in another origin's page: its isolation is not ours to ask for
  }
}

/** Whether one reload would make this page cross-origin isolated: not isolated yet, a
 * secure context with service workers, a top document whose coi-serviceworker runs on
 * demand, and no reload tried in this tab already. */
export function reloadWouldIsolate() {
  if (self.crossOriginIsolated || !self.isSecureContext || !navigator.serviceWorker) return false;
  const top = topWindow();
  if (!top || !(top.coi && top.coi.onDemand)) return false;
  try {
    return !sessionStorage.getItem(TRIED);
  } catch {
    return false; // no storage: what the reader did could not survive the reload
  }
}

/** Keep `state`, wait up to `waitMs` for the top document's worker to be active, reload
 * it. Resolves false (and reloads nothing) when the worker never became active. */
export async function reloadForIsolation(state, waitMs = 3000) {
  const top = topWindow();
  if (!top) return false;
  const serving = (reg) => !!(reg && reg.active && reg.active.state === "activated"); // navigations too
  const until = performance.now() + waitMs;
  let ready = false;
  while (!ready && performance.now() < until) {
    ready = serving(await navigator.serviceWorker.getRegistration(top.location.href).catch(() => null));
    if (!ready) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!ready) return false;
  try {
    sessionStorage.setItem(TRIED, String(Date.now()));
    sessionStorage.setItem(stateKey(), JSON.stringify(state));
  } catch {
    return false;
  }
  top.location.reload();
  return true;
}

/** What the page kept before its reload (once: it is removed as it is read), or null. */
export function takeSavedState() {
  try {
    const raw = sessionStorage.getItem(stateKey());
    sessionStorage.removeItem(stateKey());
    return raw ? JSON.parse(raw) : null;
  } catch {
    return null;
  }
}
