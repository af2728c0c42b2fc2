// A workflow run drawn as its state machine: the definition's states and
// transitions laid out by dagre (cytoscape-dagre), the path the run took
// (status.history) highlighted, the current state marked, and each
// state's input and output beside the graph.
import cytoscape from "cytoscape";
import dagre from "cytoscape-dagre";
import { h, json, duration, statusClass } from "./util.js";

cytoscape.use(dagre);

const style = [
  { selector: "node", style: { label: "data(label)", "text-valign": "center", "text-halign": "center", "text-wrap": "wrap",
    "font-size": 11, shape: "round-rectangle", width: 130, height: 40, "background-color": "#eef1f4", "border-width": 1, "border-color": "#9aa4ad", color: "#1d2329" } },
  { selector: "node.terminal", style: { shape: "ellipse", width: 44, height: 44, "background-color": "#1d2329", color: "#fff", "font-size": 10 } },
  { selector: "node.taken", style: { "background-color": "#d7f0e0", "border-color": "#2e9d5b", "border-width": 2 } },
  { selector: "node.failed", style: { "background-color": "#f8d9da", "border-color": "#d0393e", "border-width": 2 } },
  { selector: "node.terminal.taken, node.terminal.failed", style: { color: "#1d2329" } },
  { selector: "node.current", style: { "background-color": "#dbe7ff", "border-color": "#2f6fdb", "border-width": 3 } },
  { selector: "node.picked", style: { "overlay-color": "#2f6fdb", "overlay-opacity": 0.15 } },
  { selector: "edge", style: { width: 1.5, "line-color": "#b4bcc4", "target-arrow-color": "#b4bcc4", "target-arrow-shape": "triangle",
    "curve-style": "bezier", label: "data(label)", "font-size": 9, color: "#68737d", "text-background-color": "#fff", "text-background-opacity": 1 } },
  { selector: "edge.catch", style: { "line-style": "dashed" } },
  { selector: "edge.taken", style: { width: 3, "line-color": "#2e9d5b", "target-arrow-color": "#2e9d5b" } },
];

// graph turns a definition into cytoscape elements.
export function graph(def) {
  const els = [{ data: { id: "__start", label: "start" }, classes: "terminal" }, { data: { id: "__end", label: "end" }, classes: "terminal" }];
  const edge = (from, to, label, cls) => {
    if (!to) return;
    els.push({ data: { id: `${from}->${to}#${els.length}`, source: from, target: to, label: label || "" }, classes: cls || "" });
  };
  const states = (def && def.States) || {};
  for (const [name, s] of Object.entries(states)) {
    let label = `${name}\n${s.Type || ""}`;
    if (s.Type === "Parallel") label += ` (${(s.Branches || []).length})`;
    els.push({ data: { id: name, label } });
  }
  if (def && def.StartAt) edge("__start", def.StartAt);
  for (const [name, s] of Object.entries(states)) {
    if (s.Next) edge(name, s.Next);
    (s.Choices || []).forEach((c, i) => edge(name, c.Next, `choice ${i + 1}`));
    if (s.Default) edge(name, s.Default, "default");
    for (const c of s.Catch || []) edge(name, c.Next, `catch ${(c.ErrorEquals || []).join(",")}`, "catch");
    if (s.End || s.Type === "Succeed" || s.Type === "Fail") edge(name, "__end", s.Type === "Fail" ? "fail" : "");
  }
  return els;
}

export class RunView {
  constructor(root) {
    this.root = root;
    this.cy = null;
    this.defKey = "";
    this.picked = "";
  }

  // show draws run (with def, its definition) or clears the view.
  show(run, def) {
    if (!run) {
      this.root.replaceChildren();
      if (this.cy) this.cy.destroy();
      this.cy = null;
      this.defKey = "";
      return;
    }
    const st = run.status || {};
    const id = `${run.metadata.namespace}/${run.metadata.name}`;
    const defKey = id + JSON.stringify(def || {});
    if (defKey !== this.defKey || !this.cy) {
      this.defKey = defKey;
      this.graphEl = h("div", { id: "run-graph" });
      this.historyEl = h("ul", { class: "run-history" });
      this.headEl = h("div");
      this.root.replaceChildren(this.headEl, h("div", { class: "run-view" }, this.graphEl, h("div", {}, h("h3", {}, "States taken"), this.historyEl)));
      if (this.cy) this.cy.destroy();
      this.cy = cytoscape({ container: this.graphEl, elements: graph(def), style, layout: { name: "dagre", rankDir: "TB", nodeSep: 30, rankSep: 45 },
        wheelSensitivity: 0.3 });
      this.cy.on("tap", "node", (e) => this.pick(e.target.id()));
    }
    this.headEl.replaceChildren(
      h("h2", {}, `Run ${id} `, h("span", { class: "status " + statusClass(st.phase || "Pending") }, st.phase || "Pending")),
      h("p", { class: "meta" }, `workflow ${run.spec.workflow || "(inline)"} · ${st.transitions || 0} transitions · ${duration(st.startTime, st.completionTime)}`,
        st.error ? h("span", { class: "error" }, ` · ${st.error}: ${st.cause || ""}`) : ""),
      st.phase && st.phase !== "Running" && st.phase !== "Pending" && st.output ? h("details", {}, h("summary", {}, "output"), h("pre", {}, json(st.output))) : "",
    );
    this.mark(run);
  }

  mark(run) {
    const st = run.status || {};
    const hist = st.history || [];
    const cy = this.cy;
    cy.elements().removeClass("taken failed current");
    const taken = hist.map((x) => x.name);
    const path = ["__start", ...taken];
    const finished = st.phase === "Succeeded" || st.phase === "Failed" || st.phase === "TimedOut" || st.phase === "Aborted";
    if (finished) path.push("__end");
    for (const x of hist) cy.getElementById(x.name).addClass(x.error ? "failed" : "taken");
    for (let i = 0; i + 1 < path.length; i++) cy.edges(`[source = "${cssId(path[i])}"][target = "${cssId(path[i + 1])}"]`).addClass("taken");
    if (!finished && st.currentState) cy.getElementById(st.currentState).removeClass("taken").addClass("current");
    cy.nodes("#__start").addClass("taken");
    if (finished) cy.nodes("#__end").addClass(st.phase === "Succeeded" ? "taken" : "failed");
    this.graphEl.setAttribute("data-taken", taken.join(","));
    this.graphEl.setAttribute("data-phase", st.phase || "");

    const items = hist.map((x, i) =>
      h("li", { class: (x.error ? "failed" : "") + (x.name === this.picked ? " picked" : ""), "data-state": x.name, "data-index": i },
        h("strong", {}, `${i + 1}. ${x.name}`), ` ${x.type}`, x.attempts > 1 ? ` · ${x.attempts} attempts` : "",
        ` · ${duration(x.entered, x.exited)}`, x.next ? ` → ${x.next}` : "",
        x.error ? h("div", { class: "error" }, `${x.error}: ${x.cause || ""}`) : "",
        h("div", {}, "input"), h("pre", { class: "input" }, json(x.input)),
        x.output !== undefined ? [h("div", {}, "output"), h("pre", { class: "output" }, json(x.output))] : ""));
    if (!finished && st.currentState) {
      items.push(h("li", { class: "current", "data-state": st.currentState },
        h("strong", {}, st.currentState), " (now)", st.attempt ? ` · attempt ${st.attempt + 1}` : "",
        h("div", {}, "input"), h("pre", { class: "input" }, json(st.stateInput))));
    }
    this.historyEl.replaceChildren(...(items.length ? items : [h("li", {}, "no state entered yet")]));
  }

  pick(name) {
    this.picked = name;
    this.cy.nodes().removeClass("picked");
    this.cy.getElementById(name).addClass("picked");
    let first = null;
    for (const li of this.historyEl.children) {
      const on = li.getAttribute("data-state") === name;
      li.classList.toggle("picked", on);
      if (on && !first) first = li;
    }
    if (first) first.scrollIntoView({ block: "nearest" });
  }
}

const cssId = (s) => s.replace(/["\\]/g, "\\$&");
