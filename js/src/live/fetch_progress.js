// A fetch that reads the body as a stream and says how many bytes have arrived, for the
// live page's download bar (a transformer is hundreds of MB).  The bytes land in one
// buffer, sized from Content-Length when the host sends it: a 500 MB model is not held
// twice, as a Blob of chunks and then an ArrayBuffer would be.

/** The Response a loader gets: its body already read into `bytes`. */
class FetchedResponse extends Response {
  #bytes;

  constructor(bytes, res) {
    super(null, { status: res.status, statusText: res.statusText, headers: res.headers });
    this.#bytes = bytes;
  }

  async arrayBuffer() {
    const b = this.#bytes;
    return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : b.slice().buffer;
  }

  async text() {
    return new TextDecoder().decode(this.#bytes);
  }

  async json() {
    return JSON.parse(await this.text());
  }
}

/**
 * `fetchFn(url)`, its body read chunk by chunk; `onProgress(loaded, total)` after each
 * (total: Content-Length, null when the host sends none or compresses the body).  A
 * response that is not ok, or has no body stream, comes back as it is.
 */
export async function fetchWithProgress(url, onProgress, fetchFn = fetch) {
  const res = await fetchFn(url);
  if (!res.ok || !res.body || typeof onProgress !== "function") return res;
  const encoded = (res.headers.get("content-encoding") || "identity") !== "identity";
  const length = Number(res.headers.get("content-length"));
  const total = !encoded && length > 0 ? length : null; // a compressed length is not the body's
  let bytes = new Uint8Array(total ?? 1 << 16);
  let loaded = 0;
  onProgress(0, total);
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (loaded + value.length > bytes.length) {
      const grown = new Uint8Array(Math.max(2 * bytes.length, loaded + value.length));
      grown.set(bytes.subarray(0, loaded));
      bytes = grown;
    }
    bytes.set(value, loaded);
    loaded += value.length;
    onProgress(loaded, total);
  }
  return new FetchedResponse(bytes.subarray(0, loaded), res);
}
