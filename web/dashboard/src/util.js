// h builds a DOM element; children are nodes or text (never HTML), so
// nothing from the API is ever parsed as markup.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "style") el.style.cssText = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function table(headers, rows, empty) {
  if (!rows.length) return h("p", { class: "note" }, empty || "none");
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))), h("tbody", {}, rows));
}

const suffixes = { n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

// quantity parses a resource.Quantity ("250m", "16Gi", "1e3") to a number.
export function quantity(q) {
  if (q === undefined || q === null) return NaN;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m || !(m[2] in suffixes)) return NaN;
  return parseFloat(m[1]) * suffixes[m[2]];
}

export function bytes(n) {
  if (!isFinite(n)) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(n < 10 && i > 0 ? 1 : 0)} ${units[i]}`;
}

export function cores(n) {
  if (!isFinite(n)) return "?";
  return n < 1 ? `${Math.round(n * 1000)}m` : `${+n.toFixed(2)}`;
}

export function age(ts) {
  if (!ts) return "";
  const s = Math.max(0, (Date.now() - new Date(ts).getTime()) / 1000);
  if (s < 120) return `${Math.floor(s)}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

export function duration(from, to) {
  if (!from) return "";
  const ms = (to ? new Date(to) : new Date()) - new Date(from);
  if (ms < 1000) return `${ms}ms`;
  if (ms < 120000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.round(ms / 60000)}m`;
}

export function bar(fraction) {
  const pct = isFinite(fraction) ? Math.max(0, Math.min(1, fraction)) * 100 : 0;
  return h("span", { class: "bar" + (pct > 85 ? " high" : "") }, h("span", { style: `width:${pct.toFixed(1)}%` }));
}

export function json(v) {
  if (v === undefined || v === null) return "";
  return JSON.stringify(v, null, 2);
}

// statusClass maps a status word to a colour class.
export function statusClass(s) {
  if (/^(Running|Ready|Succeeded|Completed|Bound|Available|True|Normal|COMPLETED|RUNNING)$/.test(s)) return "s-ok";
  if (/^(Pending|ContainerCreating|PodInitializing|Released|Terminating|PENDING|Waiting|Unknown)$/.test(s)) return "s-warn";
  if (/Err|BackOff|Fail|OOM|Lost|Evicted|NotReady|Warning|TIMEOUT|CANCELLED|Timed/.test(s)) return "s-bad";
  return "s-info";
}
