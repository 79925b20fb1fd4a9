// The benchmark page's script: runs one model in harness_worker.js, resolves with its report.
window.scoreInWorker = (job) => new Promise((resolve) => {
  const worker = new Worker("harness_worker.js", { type: "module" });
  worker.onmessage = (ev) => { resolve(ev.data); worker.terminate(); };
  worker.onerror = (ev) => { resolve({ ok: false, error: ev.message || "worker error" }); };
  worker.postMessage({ ...job, baseUrl: new URL(".", location.href).href });
});
