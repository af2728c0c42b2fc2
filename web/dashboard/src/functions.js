// The Functions tab: a card per function with its instances (from the
// watch, sampled here) and its request rate and latency (from Prometheus,
// the router's minik8s_function_* series, through the apiserver's service
// proxy) over the last 15 minutes, as a Chart.js line chart.
import { Chart, LineController, LineElement, PointElement, LinearScale, Legend, Tooltip } from "chart.js";
import { h, statusClass } from "./util.js";

Chart.register(LineController, LineElement, PointElement, LinearScale, Legend, Tooltip);

const windowSeconds = 15 * 60;
const promPath = "/api/v1/namespaces/kube-system/services/prometheus:9090/proxy/api/v1/query_range";

const clock = (v) => new Date(v * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });

export class FunctionsView {
  constructor(root) {
    this.root = root;
    this.cards = new Map(); // ns/name -> {card, chart, instances: [{x,y}], rate, latency}
    this.prom = { state: "unknown", message: "" };
    this.note = h("p", { class: "note", id: "prom-note" });
    this.grid = h("div", { class: "cards", id: "function-cards" });
    this.empty = h("p", { class: "note" }, "no functions");
    root.append(h("h2", {}, "Functions"), this.note, this.empty, this.grid);
    this.functions = [];
    setInterval(() => this.sample(), 5000);
  }

  // update is called with the current functions (already filtered by namespace).
  update(functions, error) {
    this.functions = functions;
    this.empty.textContent = error ? `functions: ${error.message}` : "no functions";
    this.empty.className = error ? "note error" : "note";
    this.empty.style.display = functions.length ? "none" : "";
    const seen = new Set();
    for (const fn of functions) {
      const id = `${fn.metadata.namespace}/${fn.metadata.name}`;
      seen.add(id);
      let c = this.cards.get(id);
      if (!c) {
        c = this.newCard(id);
        this.cards.set(id, c);
        this.grid.append(c.card);
      }
      this.fill(c, fn);
    }
    for (const [id, c] of this.cards) {
      if (!seen.has(id)) {
        c.chart.destroy();
        c.card.remove();
        this.cards.delete(id);
      }
    }
  }

  newCard(id) {
    const canvas = h("canvas", { "data-function": id });
    const head = h("div");
    const card = h("div", { class: "card function", "data-function": id }, head, h("div", { class: "chart" }, canvas));
    const c = { id, card, head, canvas, instances: [], rate: [], latency: [], latency50: [] };
    c.chart = new Chart(canvas, {
      type: "line",
      data: {
        datasets: [
          { label: "instances", data: c.instances, borderColor: "#2e9d5b", backgroundColor: "#2e9d5b", stepped: true, yAxisID: "y", pointRadius: 2 },
          { label: "requests/s", data: c.rate, borderColor: "#2f6fdb", backgroundColor: "#2f6fdb", yAxisID: "y", pointRadius: 0 },
          { label: "p95 latency (ms)", data: c.latency, borderColor: "#d0393e", backgroundColor: "#d0393e", yAxisID: "ms", pointRadius: 0 },
          { label: "p50 latency (ms)", data: c.latency50, borderColor: "#d39b10", backgroundColor: "#d39b10", yAxisID: "ms", pointRadius: 0 },
        ],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        parsing: false,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        scales: {
          x: { type: "linear", ticks: { callback: clock, maxTicksLimit: 6 } },
          y: { type: "linear", beginAtZero: true, title: { display: true, text: "instances, req/s" } },
          ms: { type: "linear", position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, title: { display: true, text: "ms" } },
        },
        plugins: { tooltip: { callbacks: { title: (items) => (items.length ? clock(items[0].parsed.x) : "") } },
          legend: { labels: { boxWidth: 10 } } },
      },
    });
    return c;
  }

  fill(c, fn) {
    const st = fn.status || {};
    const ready = (st.conditions || []).find((x) => x.type === "Ready");
    const word = ready ? (ready.status === "True" ? "Ready" : ready.reason || "NotReady") : "Pending";
    c.fn = fn;
    c.head.replaceChildren(
      h("h3", {}, c.id, " ", h("span", { class: "status " + statusClass(ready && ready.status === "True" ? "Ready" : word) }, word)),
      h("div", { class: "meta" }, `${fn.spec.runtime} · revision ${st.revision || 0} · instances `,
        h("span", { class: "instances" }, `${st.readyInstances || 0}/${st.instances || 0}`), st.url ? ` · ${st.url}` : ""),
    );
    this.push(c, st.instances || 0);
  }

  // redraw fits the time axis to the data: from the oldest point (at least
  // a minute back) to now.
  redraw(c) {
    const now = Date.now() / 1000;
    let min = now - 60;
    for (const d of [c.instances, c.rate, c.latency]) if (d.length) min = Math.min(min, d[0].x);
    c.chart.options.scales.x.min = Math.max(min, now - windowSeconds);
    c.chart.options.scales.x.max = now;
    c.chart.update("none");
    c.card.setAttribute("data-points", String(c.instances.length + c.rate.length));
  }

  push(c, n) {
    const now = Date.now() / 1000;
    const last = c.instances[c.instances.length - 1];
    if (last && last.y === n && now - last.x < 4) return;
    c.instances.push({ x: now, y: n });
    while (c.instances.length && c.instances[0].x < now - windowSeconds) c.instances.shift();
    this.redraw(c);
  }

  // sample keeps the instance line going between watch events and, while
  // the tab is shown, refreshes the Prometheus series.
  sample() {
    for (const c of this.cards.values()) if (c.fn) this.push(c, (c.fn.status || {}).instances || 0);
    if (this.root.classList.contains("active")) this.refresh();
  }

  async refresh() {
    if (this.refreshing) return;
    this.refreshing = true;
    try {
      await this.refreshAll();
    } finally {
      this.refreshing = false;
    }
  }

  async refreshAll() {
    const end = Math.floor(Date.now() / 1000);
    const start = end - windowSeconds;
    for (const c of this.cards.values()) {
      const [ns, name] = c.id.split("/");
      const sel = `namespace="${ns}",function="${name}"`;
      try {
        // One after another: the watches hold most of the browser's six
        // connections to this origin.
        const rate = await query(`sum(rate(minik8s_function_invocations_total{${sel}}[1m]))`, start, end);
        const p95 = await query(`histogram_quantile(0.95, sum by (le) (rate(minik8s_function_request_duration_seconds_bucket{${sel}}[1m])))`, start, end);
        const p50 = await query(`histogram_quantile(0.5, sum by (le) (rate(minik8s_function_request_duration_seconds_bucket{${sel}}[1m])))`, start, end);
        replace(c.rate, rate, 1);
        replace(c.latency, p95, 1000);
        replace(c.latency50, p50, 1000);
        this.redraw(c);
        this.setProm("ok", "request rate and latency from Prometheus (minik8s_function_* series), last 15 minutes");
      } catch (e) {
        this.setProm("absent", `Prometheus is not reachable (${e.message}): request rate and latency are not shown, only instances.`);
        return;
      }
    }
  }

  setProm(state, message) {
    this.prom = { state, message };
    this.note.textContent = message;
    this.note.setAttribute("data-prometheus", state);
  }
}

async function query(q, start, end) {
  const url = `${promPath}?query=${encodeURIComponent(q)}&start=${start}&end=${end}&step=15`;
  const resp = await fetch(url, { headers: { Accept: "application/json" } });
  if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
  const body = await resp.json();
  if (body.status !== "success") throw new Error(body.error || "query failed");
  const series = body.data.result[0];
  return series ? series.values.map(([t, v]) => ({ x: t, y: parseFloat(v) })).filter((p) => isFinite(p.y)) : [];
}

function replace(arr, points, scale) {
  arr.length = 0;
  for (const p of points) arr.push({ x: p.x, y: p.y * scale });
}
