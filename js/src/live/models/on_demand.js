// Which kinds load with the page and which wait until the reader picks them: shared by the
// page (what its notes say) and the worker (what it fetches), without the page bundling
// the model kinds themselves.

/** Whether a kind's files wait until the reader picks the model (large downloads), or load
 * with the page (the n-gram's counts: small, and its colours come at once). */
export function loadsOnDemand(kind) {
  return kind !== "ngram";
}
