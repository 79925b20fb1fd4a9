// Loaded before coi-serviceworker.js (a classic script: coi reads window.coi as it runs).
// coi-serviceworker registers its worker and, by default, reloads the page at once to be
// cross-origin isolated. Here it registers the worker but does not reload: the n-gram
// needs no threads, and that reload would hold back a first visit's first colours. The
// live page reloads once, keeping what its reader did, only when a transformer is about to
// load (js/src/live/isolation.js); later visits are isolated from the start.
(function () {
  var own = window.coi || {};
  window.coi = Object.assign({}, own, {
    onDemand: true,
    quiet: true,
    // no reload now: isolation.js asks the registration itself when a transformer needs it
    doReload: function () {},
  });
})();
