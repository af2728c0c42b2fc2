// An informer, as client-go has it, over fetch: list, then watch from the
// list's resourceVersion (newline-delimited JSON over a chunked response),
// keeping a map of the objects. A watch that ends is resumed from the last
// resourceVersion seen; a 410 Gone (or any other error) relists.

const key = (o) => (o.metadata.namespace ? o.metadata.namespace + "/" : "") + o.metadata.name;

export class Informer {
  // path is a collection, e.g. /api/v1/pods or /api/v1/namespaces/x/pods.
  constructor(path, onChange, onState) {
    this.path = path;
    this.items = new Map();
    this.onChange = onChange;
    this.onState = onState || (() => {});
    this.error = null; // the last error, for the view to show
    this.synced = false;
    this.abort = new AbortController();
    this.run();
  }

  stop() {
    this.abort.abort();
  }

  list() {
    return [...this.items.values()];
  }

  async run() {
    let backoff = 500;
    while (!this.abort.signal.aborted) {
      try {
        let rv = await this.relist();
        backoff = 500;
        for (;;) {
          rv = await this.watch(rv);
          if (rv === null) break; // relist
        }
      } catch (e) {
        if (this.abort.signal.aborted) return;
        this.error = e;
        this.onState(this, false);
        this.onChange(this);
      }
      if (this.abort.signal.aborted) return;
      await sleep(backoff, this.abort.signal);
      backoff = Math.min(backoff * 2, 30000);
    }
  }

  async relist() {
    const resp = await fetch(this.path, { signal: this.abort.signal, headers: { Accept: "application/json" } });
    if (!resp.ok) throw await apiError(resp);
    const list = await resp.json();
    this.items = new Map((list.items || []).map((o) => [key(o), o]));
    this.error = null;
    this.synced = true;
    this.onState(this, true);
    this.onChange(this);
    return list.metadata.resourceVersion;
  }

  // watch streams events from rv; it returns the resourceVersion to resume
  // from when the stream ends, or null when the informer must relist.
  async watch(rv) {
    const sep = this.path.includes("?") ? "&" : "?";
    const url = `${this.path}${sep}watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(rv)}`;
    const resp = await fetch(url, { signal: this.abort.signal, headers: { Accept: "application/json" } });
    if (resp.status === 410) return null;
    if (!resp.ok) throw await apiError(resp);
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return rv;
      buf += decoder.decode(value, { stream: true });
      let nl;
      let changed = false;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line) continue;
        const ev = JSON.parse(line);
        if (ev.type === "ERROR") {
          reader.cancel().catch(() => {});
          if (ev.object && ev.object.code === 410) return null;
          throw new Error((ev.object && ev.object.message) || "watch error");
        }
        const o = ev.object;
        if (o && o.metadata && o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
        if (ev.type === "BOOKMARK") continue;
        if (ev.type === "DELETED") this.items.delete(key(o));
        else this.items.set(key(o), o);
        changed = true;
      }
      if (changed) this.onChange(this);
    }
  }
}

// apiError turns a failed response into an Error carrying the status.
export async function apiError(resp) {
  let msg = `${resp.status} ${resp.statusText}`;
  try {
    const s = await resp.json();
    if (s.message) msg = `${resp.status}: ${s.message}`;
  } catch (_) {
    /* not a Status */
  }
  const e = new Error(msg);
  e.status = resp.status;
  return e;
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}
