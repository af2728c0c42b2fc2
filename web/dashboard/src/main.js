// The minik8s dashboard (docs/design/0027-dashboard.md): one page that
// watches the same origin's Kubernetes API with the user's credentials
// (through `kubectl proxy`) and draws the cluster as it changes.
import { Informer } from "./informer.js";
import { h, table, quantity, bytes, cores, age, bar, statusClass, duration } from "./util.js";
import { FunctionsView } from "./functions.js";
import { RunView } from "./workflow.js";

const resources = {
  nodes: { group: "/api/v1", name: "nodes", cluster: true },
  pods: { group: "/api/v1", name: "pods" },
  deployments: { group: "/apis/apps/v1", name: "deployments" },
  statefulsets: { group: "/apis/apps/v1", name: "statefulsets" },
  daemonsets: { group: "/apis/apps/v1", name: "daemonsets" },
  jobs: { group: "/apis/batch/v1", name: "jobs" },
  services: { group: "/api/v1", name: "services" },
  endpointslices: { group: "/apis/discovery.k8s.io/v1", name: "endpointslices" },
  events: { group: "/api/v1", name: "events" },
  functions: { group: "/apis/minik8s.io/v1", name: "functions" },
  workflows: { group: "/apis/minik8s.io/v1", name: "workflows" },
  workflowruns: { group: "/apis/minik8s.io/v1", name: "workflowruns" },
  pvs: { group: "/api/v1", name: "persistentvolumes", cluster: true },
  pvcs: { group: "/api/v1", name: "persistentvolumeclaims" },
};

// Which resources each tab draws. Only the shown tab's are watched: a
// browser opens at most 6 HTTP/1.1 connections to one origin (kubectl
// proxy speaks HTTP/1.1), and each watch holds one.
const uses = {
  nodes: ["nodes", "pods"],
  workloads: ["deployments", "statefulsets", "daemonsets", "jobs", "pods"],
  services: ["services", "endpointslices"],
  functions: ["functions"],
  workflows: ["workflows", "workflowruns"],
  slurm: ["nodes", "pods"],
  storage: ["pvs", "pvcs"],
  events: ["events"],
};

const inf = {}; // resource -> Informer
let namespace = "";
let nodeMetrics = { items: new Map(), error: null };
let route = { tab: "nodes", run: null };
const dirty = new Set();
let scheduled = false;

const sections = Object.fromEntries(Object.keys(uses).map((t) => [t, document.getElementById(t)]));
const functionsView = new FunctionsView(sections.functions);
const runList = h("div");
const runDetail = h("div", { id: "run-detail" });
sections.workflows.append(runList, runDetail);
const runView = new RunView(runDetail);
const bodies = {};
for (const t of Object.keys(uses)) {
  if (t === "functions" || t === "workflows") continue;
  bodies[t] = h("div");
  sections[t].append(bodies[t]);
}
bodies.workflows = runList;

function path(res) {
  const r = resources[res];
  return r.cluster || !namespace ? `${r.group}/${r.name}` : `${r.group}/namespaces/${encodeURIComponent(namespace)}/${r.name}`;
}

function changed(informer) {
  for (const [tab, list] of Object.entries(uses)) if (list.includes(informer.res)) dirty.add(tab);
  schedule();
}

function connState() {
  const all = Object.values(inf);
  const bad = all.filter((i) => i.error);
  const el = document.getElementById("conn");
  el.className = bad.length ? "bad" : "ok";
  el.textContent = bad.length ? `${bad.length} of ${all.length} watches failing` : `${all.length} watches live`;
}

function start(res) {
  if (inf[res]) inf[res].stop();
  const i = new Informer(path(res), changed, connState);
  i.res = res;
  inf[res] = i;
}

// watchTab watches what the shown tab draws and stops the other watches;
// restart restarts the namespaced ones (a new namespace was chosen).
function watchTab(restart) {
  const want = new Set(uses[route.tab]);
  for (const res of Object.keys(inf)) {
    if (!want.has(res)) {
      inf[res].stop();
      delete inf[res];
    }
  }
  for (const res of want) if (!inf[res] || (restart && !resources[res].cluster)) start(res);
  for (const t of Object.keys(uses)) dirty.add(t);
  connState();
  schedule();
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    for (const t of dirty) {
      try {
        render[t]();
      } catch (e) {
        console.error(`render ${t}`, e);
      }
    }
    dirty.clear();
  });
}

const items = (res) => (inf[res] ? inf[res].list() : []);
const byName = (a, b) => (a.metadata.namespace || "").localeCompare(b.metadata.namespace || "") || a.metadata.name.localeCompare(b.metadata.name);
const errorNote = (...res) => res.filter((r) => inf[r] && inf[r].error).map((r) => h("p", { class: "note error" }, `${resources[r].name}: ${inf[r].error.message}`));
const nsName = (o) => (namespace ? o.metadata.name : `${o.metadata.namespace}/${o.metadata.name}`);

// podStatus is the word kubectl shows in STATUS.
export function podStatus(p) {
  if (p.metadata.deletionTimestamp) return "Terminating";
  const st = p.status || {};
  let reason = st.reason || st.phase || "Pending";
  for (const c of st.initContainerStatuses || []) {
    if (c.state && c.state.terminated && c.state.terminated.exitCode === 0) continue;
    if (c.state && c.state.waiting && c.state.waiting.reason && c.state.waiting.reason !== "PodInitializing") return `Init:${c.state.waiting.reason}`;
    if (c.state && c.state.terminated) return `Init:${c.state.terminated.reason || "Error"}`;
  }
  for (const c of st.containerStatuses || []) {
    if (c.state && c.state.waiting && c.state.waiting.reason) reason = c.state.waiting.reason;
    else if (c.state && c.state.terminated && c.state.terminated.reason && reason !== "Running") reason = c.state.terminated.reason;
  }
  return reason;
}

const restarts = (p) => ((p.status && p.status.containerStatuses) || []).reduce((n, c) => n + (c.restartCount || 0), 0);
const readyCount = (p) => {
  const cs = (p.status && p.status.containerStatuses) || [];
  return `${cs.filter((c) => c.ready).length}/${(p.spec.containers || []).length}`;
};

// owner is the workload a pod belongs to, as "Kind/namespace/name".
function owner(p) {
  const ref = (p.metadata.ownerReferences || []).find((r) => r.controller) || (p.metadata.ownerReferences || [])[0];
  if (!ref) return "";
  let kind = ref.kind;
  let name = ref.name;
  const hash = (p.metadata.labels || {})["pod-template-hash"];
  if (kind === "ReplicaSet" && hash && name.endsWith("-" + hash)) {
    kind = "Deployment";
    name = name.slice(0, -hash.length - 1);
  }
  return `${kind}/${p.metadata.namespace}/${name}`;
}

const render = {
  nodes() {
    const pods = items("pods");
    const rows = items("nodes").sort(byName).map((n) => {
      const cap = n.status.capacity || {};
      const alloc = n.status.allocatable || cap;
      const ready = (n.status.conditions || []).find((c) => c.type === "Ready");
      const word = ready && ready.status === "True" ? "Ready" : "NotReady";
      const m = nodeMetrics.items.get(n.metadata.name);
      const cpuUse = m ? quantity(m.usage.cpu) : NaN;
      const memUse = m ? quantity(m.usage.memory) : NaN;
      const cpuAlloc = quantity(alloc.cpu);
      const memAlloc = quantity(alloc.memory);
      const onNode = pods.filter((p) => p.spec.nodeName === n.metadata.name && !["Succeeded", "Failed"].includes(p.status.phase)).length;
      const roles = Object.keys(n.metadata.labels || {}).filter((l) => l.startsWith("node-role.kubernetes.io/")).map((l) => l.split("/")[1]);
      const addr = (n.status.addresses || []).find((a) => a.type === "InternalIP");
      return h("tr", { "data-node": n.metadata.name },
        h("td", {}, n.metadata.name, roles.length ? h("div", { class: "meta" }, roles.join(",")) : ""),
        h("td", { class: "status " + statusClass(word) }, word, n.spec.unschedulable ? " (cordoned)" : ""),
        h("td", {}, addr ? addr.address : ""),
        h("td", { class: "capacity", "data-cpu": cap.cpu, "data-memory": cap.memory, "data-pods": cap.pods },
          `${cores(quantity(cap.cpu))} CPU · ${bytes(quantity(cap.memory))} · ${cap.pods || "?"} pods`,
          (cap["nvidia.com/gpu"] ? ` · ${cap["nvidia.com/gpu"]} GPU` : "")),
        h("td", { class: "cpu-use" }, m ? [bar(cpuUse / cpuAlloc), `${cores(cpuUse)} / ${cores(cpuAlloc)}`] : "–"),
        h("td", { class: "mem-use" }, m ? [bar(memUse / memAlloc), `${bytes(memUse)} / ${bytes(memAlloc)}`] : "–"),
        h("td", {}, [bar(onNode / quantity(alloc.pods)), `${onNode} / ${alloc.pods || "?"}`]),
        h("td", {}, (n.status.nodeInfo || {}).kubeletVersion || ""),
        h("td", {}, age(n.metadata.creationTimestamp)));
    });
    bodies.nodes.replaceChildren(h("h2", {}, "Nodes"), ...errorNote("nodes"),
      nodeMetrics.error ? h("p", { class: "note" }, `node metrics (metrics.k8s.io): ${nodeMetrics.error}`) : "",
      table(["name", "status", "address", "capacity", "CPU use", "memory use", "pods", "kubelet", "age"], rows, "no nodes"));
  },

  workloads() {
    const pods = items("pods").sort(byName);
    const groups = new Map();
    for (const p of pods) {
      const o = owner(p);
      if (!groups.has(o)) groups.set(o, []);
      groups.get(o).push(p);
    }
    const chips = (list) => h("div", { class: "pods" }, list.map((p) => {
      const s = podStatus(p);
      return h("span", { class: "pod " + statusClass(s), "data-pod": p.metadata.name, "data-status": s, title: `${p.metadata.name}: ${s}, ${restarts(p)} restarts` },
        `${p.metadata.name.slice(-5)} ${s}`);
    }));
    const cards = [];
    const kinds = [["Deployment", "deployments"], ["StatefulSet", "statefulsets"], ["DaemonSet", "daemonsets"], ["Job", "jobs"]];
    for (const [kind, res] of kinds) {
      for (const w of items(res).sort(byName)) {
        const id = `${kind}/${w.metadata.namespace}/${w.metadata.name}`;
        const st = w.status || {};
        let counts;
        if (kind === "DaemonSet") counts = `${st.numberReady || 0}/${st.desiredNumberScheduled || 0} ready`;
        else if (kind === "Job") counts = `${st.succeeded || 0}/${w.spec.completions || 1} succeeded${st.failed ? `, ${st.failed} failed` : ""}${st.active ? `, ${st.active} active` : ""}`;
        else counts = `${st.readyReplicas || 0}/${w.spec.replicas ?? 1} ready${st.updatedReplicas !== undefined ? `, ${st.updatedReplicas} up to date` : ""}`;
        const list = groups.get(id) || [];
        groups.delete(id);
        cards.push(h("div", { class: "card workload", "data-workload": id },
          h("h3", {}, `${kind} ${nsName(w)}`), h("div", { class: "meta" }, `${counts} · ${age(w.metadata.creationTimestamp)}`), chips(list)));
      }
    }
    const rest = [...groups.entries()].flatMap(([, l]) => l);
    if (rest.length) cards.push(h("div", { class: "card workload", "data-workload": "" }, h("h3", {}, "other pods"), chips(rest)));
    const rows = pods.map((p) => {
      const s = podStatus(p);
      return h("tr", { "data-pod": `${p.metadata.namespace}/${p.metadata.name}`, "data-status": s },
        h("td", {}, nsName(p)), h("td", { class: "status " + statusClass(s) }, s), h("td", {}, readyCount(p)),
        h("td", { class: "restarts" }, restarts(p)), h("td", {}, p.spec.nodeName || ""), h("td", {}, (p.status || {}).podIP || ""),
        h("td", {}, owner(p).split("/").filter((_, i) => i !== 1).join("/")), h("td", {}, age(p.metadata.creationTimestamp)));
    });
    bodies.workloads.replaceChildren(h("h2", {}, "Workloads"), ...errorNote("deployments", "statefulsets", "daemonsets", "jobs"),
      cards.length ? h("div", { class: "cards" }, cards) : h("p", { class: "note" }, "no workloads"),
      h("h2", {}, "Pods"), ...errorNote("pods"),
      table(["name", "status", "ready", "restarts", "node", "IP", "owner", "age"], rows, "no pods"));
  },

  services() {
    const slices = items("endpointslices");
    const rows = items("services").sort(byName).map((s) => {
      const mine = slices.filter((e) => e.metadata.namespace === s.metadata.namespace && (e.metadata.labels || {})["kubernetes.io/service-name"] === s.metadata.name);
      const eps = mine.flatMap((e) => (e.endpoints || []).map((ep) => {
        const port = (e.ports || []).map((p) => p.port).join(",");
        const ready = !ep.conditions || ep.conditions.ready !== false;
        const target = ep.targetRef ? ` (${ep.targetRef.name})` : "";
        return h("div", { class: ready ? "s-ok" : "s-warn" }, `${(ep.addresses || []).join(",")}${port ? ":" + port : ""}${target}${ready ? "" : " not ready"}`);
      }));
      const ports = (s.spec.ports || []).map((p) => `${p.port}${p.nodePort ? ":" + p.nodePort : ""}/${p.protocol || "TCP"}`).join(", ");
      return h("tr", { "data-service": `${s.metadata.namespace}/${s.metadata.name}` },
        h("td", {}, nsName(s)), h("td", {}, s.spec.type || "ClusterIP"), h("td", {}, s.spec.clusterIP || ""), h("td", {}, ports),
        h("td", { class: "endpoints" }, eps.length ? eps : h("span", { class: "s-idle" }, "none")), h("td", {}, age(s.metadata.creationTimestamp)));
    });
    bodies.services.replaceChildren(h("h2", {}, "Services"), ...errorNote("services", "endpointslices"),
      table(["name", "type", "cluster IP", "ports", "endpoints", "age"], rows, "no services"));
  },

  functions() {
    functionsView.update(items("functions").sort(byName), inf.functions && inf.functions.error);
  },

  workflows() {
    const runs = items("workflowruns").sort((a, b) => (b.metadata.creationTimestamp || "").localeCompare(a.metadata.creationTimestamp || "") || byName(a, b));
    const wfs = items("workflows").sort(byName);
    const wfRows = wfs.map((w) => {
      const c = ((w.status || {}).conditions || []).find((x) => x.type === "Ready");
      return h("tr", {}, h("td", {}, nsName(w)), h("td", { class: "status " + statusClass(c ? (c.status === "True" ? "Ready" : c.reason) : "Pending") }, c ? (c.status === "True" ? "Ready" : c.reason) : "Pending"),
        h("td", {}, Object.keys(((w.spec || {}).definition || {}).States || {}).length), h("td", {}, age(w.metadata.creationTimestamp)));
    });
    const sel = route.run;
    const rows = runs.slice(0, 200).map((r) => {
      const st = r.status || {};
      const id = `${r.metadata.namespace}/${r.metadata.name}`;
      return h("tr", { class: "clickable" + (sel === id ? " selected" : ""), "data-run": id, onclick: () => { location.hash = `#workflows/${id}`; } },
        h("td", {}, nsName(r)), h("td", {}, r.spec.workflow || "(inline)"), h("td", { class: "status " + statusClass(st.phase || "Pending") }, st.phase || "Pending"),
        h("td", {}, st.currentState || ""), h("td", {}, st.transitions || 0), h("td", {}, duration(st.startTime, st.completionTime)), h("td", {}, age(r.metadata.creationTimestamp)));
    });
    runList.replaceChildren(h("h2", {}, "Workflows"), ...errorNote("workflows", "workflowruns"),
      table(["name", "ready", "states", "age"], wfRows, "no workflows"),
      h("h2", {}, "Runs"), h("p", { class: "note" }, "click a run to follow it"),
      table(["name", "workflow", "phase", "state", "transitions", "duration", "age"], rows, "no runs"));
    const run = sel && inf.workflowruns ? inf.workflowruns.items.get(sel) : null;
    if (run) {
      const st = run.status || {};
      let def = st.definition || run.spec.definition;
      if (!def && run.spec.workflow) {
        const w = inf.workflows.items.get(`${run.metadata.namespace}/${run.spec.workflow}`);
        def = w && w.spec.definition;
      }
      runView.show(run, def);
    } else {
      runView.show(null);
      if (sel) runDetail.replaceChildren(h("p", { class: "note" }, `run ${sel} is not (or no longer) in the list`));
    }
  },

  slurm() {
    const slurmNodes = new Set(items("nodes").filter((n) => (n.metadata.labels || {})["minik8s.io/provider"] === "slurm").map((n) => n.metadata.name));
    const a = (p, k) => (p.metadata.annotations || {})[`slurm.minik8s.io/${k}`] || "";
    const pods = items("pods").filter((p) => slurmNodes.has(p.spec.nodeName) || a(p, "job-id")).sort(byName);
    const rows = pods.map((p) => {
      const s = podStatus(p);
      return h("tr", { "data-pod": `${p.metadata.namespace}/${p.metadata.name}` }, h("td", {}, nsName(p)), h("td", {}, a(p, "job-id")),
        h("td", { class: "status " + statusClass(a(p, "job-state") || s) }, a(p, "job-state") || "–"), h("td", { class: "status " + statusClass(s) }, s),
        h("td", {}, a(p, "partition")), h("td", {}, a(p, "node-list")), h("td", {}, p.spec.nodeName || ""), h("td", {}, a(p, "submit-time")),
        h("td", {}, owner(p).split("/").filter((_, i) => i !== 1).join("/")));
    });
    bodies.slurm.replaceChildren(h("h2", {}, "Slurm jobs"),
      h("p", { class: "note" }, slurmNodes.size ? `virtual Slurm nodes: ${[...slurmNodes].join(", ")}` : "no virtual Slurm nodes (minik8s agent --provider slurm)"),
      table(["pod", "job id", "job state", "pod status", "partition", "Slurm nodes", "node", "submitted", "owner"], rows, "no Slurm jobs"));
  },

  storage() {
    const pvRows = items("pvs").sort(byName).map((v) => {
      const c = v.spec.claimRef;
      const phase = (v.status || {}).phase || "";
      return h("tr", { "data-pv": v.metadata.name }, h("td", {}, v.metadata.name), h("td", {}, (v.spec.capacity || {}).storage || ""),
        h("td", {}, (v.spec.accessModes || []).join(",")), h("td", {}, v.spec.persistentVolumeReclaimPolicy || ""),
        h("td", { class: "status " + statusClass(phase) }, phase), h("td", {}, c ? `${c.namespace}/${c.name}` : ""),
        h("td", {}, v.spec.storageClassName || ""), h("td", {}, age(v.metadata.creationTimestamp)));
    });
    const pvcRows = items("pvcs").sort(byName).map((c) => {
      const phase = (c.status || {}).phase || "";
      return h("tr", { "data-pvc": `${c.metadata.namespace}/${c.metadata.name}` }, h("td", {}, nsName(c)), h("td", { class: "status " + statusClass(phase) }, phase),
        h("td", {}, c.spec.volumeName || ""), h("td", {}, ((c.status || {}).capacity || {}).storage || ((c.spec.resources || {}).requests || {}).storage || ""),
        h("td", {}, (c.spec.accessModes || []).join(",")), h("td", {}, c.spec.storageClassName || ""), h("td", {}, age(c.metadata.creationTimestamp)));
    });
    bodies.storage.replaceChildren(h("h2", {}, "Persistent volumes"), ...errorNote("pvs"),
      table(["name", "capacity", "access", "reclaim", "status", "claim", "class", "age"], pvRows, "no persistent volumes"),
      h("h2", {}, "Claims"), ...errorNote("pvcs"),
      table(["name", "status", "volume", "capacity", "access", "class", "age"], pvcRows, "no claims"));
  },

  events() {
    const when = (e) => e.lastTimestamp || e.eventTime || (e.series && e.series.lastObservedTime) || e.firstTimestamp || e.metadata.creationTimestamp || "";
    const evs = items("events").sort((a, b) => when(b).localeCompare(when(a))).slice(0, 300);
    const rows = evs.map((e) => h("tr", {}, h("td", {}, age(when(e))), h("td", { class: "status " + statusClass(e.type || "Normal") }, e.type || ""),
      h("td", {}, `${e.involvedObject.kind}/${namespace ? "" : (e.involvedObject.namespace ? e.involvedObject.namespace + "/" : "")}${e.involvedObject.name}`),
      h("td", {}, e.reason || ""), h("td", {}, e.message || ""), h("td", {}, e.count || 1),
      h("td", {}, (e.source && e.source.component) || e.reportingComponent || "")));
    bodies.events.replaceChildren(h("h2", {}, "Events"), ...errorNote("events"),
      table(["last seen", "type", "object", "reason", "message", "count", "from"], rows, "no events"));
  },
};

// Namespaces are listed when the page opens and when the chooser is
// opened, not watched (see uses).
async function listNamespaces() {
  let names = [];
  try {
    const resp = await fetch("/api/v1/namespaces", { headers: { Accept: "application/json" } });
    if (resp.ok) names = ((await resp.json()).items || []).map((n) => n.metadata.name).sort();
  } catch (_) {
    /* the chooser keeps "all namespaces" */
  }
  const sel = document.getElementById("namespace");
  if (namespace && !names.includes(namespace)) names.push(namespace);
  const opts = [h("option", { value: "" }, "all namespaces"), ...names.map((n) => h("option", { value: n }, n))];
  sel.replaceChildren(...opts);
  sel.value = namespace;
}

// Node metrics have no watch (metrics.k8s.io serves get and list only), so
// they are listed every 10 seconds.
async function pollMetrics() {
  if (route.tab !== "nodes") return;
  try {
    const resp = await fetch("/apis/metrics.k8s.io/v1beta1/nodes", { headers: { Accept: "application/json" } });
    if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
    const l = await resp.json();
    nodeMetrics = { items: new Map((l.items || []).map((m) => [m.metadata.name, m])), error: null };
  } catch (e) {
    nodeMetrics = { items: new Map(), error: e.message };
  }
  dirty.add("nodes");
  schedule();
}

function onRoute() {
  const parts = location.hash.replace(/^#/, "").split("/");
  const tab = sections[parts[0]] ? parts[0] : "nodes";
  route = { tab, run: tab === "workflows" && parts.length >= 3 ? `${decodeURIComponent(parts[1])}/${decodeURIComponent(parts.slice(2).join("/"))}` : null };
  for (const [t, el] of Object.entries(sections)) el.classList.toggle("active", t === tab);
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.tab === tab);
  watchTab(false);
  if (tab === "functions") functionsView.refresh();
  if (tab === "nodes") pollMetrics();
}

document.getElementById("namespace").addEventListener("change", (e) => {
  namespace = e.target.value;
  watchTab(true);
});
document.getElementById("namespace").addEventListener("focus", listNamespaces);
window.addEventListener("hashchange", onRoute);
onRoute();
listNamespaces();
setInterval(pollMetrics, 10000);
// Ages and durations move on without events.
setInterval(() => {
  dirty.add(route.tab);
  schedule();
}, 5000);
