// The gearag page: ask, watch the agent's steps stream in, see the answer, passages and beams as a graph.
// Every piece of data is rendered as text (textContent / text nodes, no HTML parsing), so passages cannot
// inject markup.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_STORE = "gearag-api-key";
let cy = null;

// An element with attributes and children; strings become text nodes (escaped by the DOM).
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return node;
}

function headers(json) {
  const h = {};
  if (json) h["Content-Type"] = "application/json";
  const key = $("api-key").value.trim();
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error) return body.error.message;
  } catch (e) { /* not JSON */ }
  return response.status + " " + response.statusText;
}

async function getJSON(url) {
  const response = await fetch(url, { headers: headers(false) });
  if (!response.ok) throw new Error(await errorText(response));
  return response.json();
}

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.className = isError ? "error" : "muted";
}

const tripleText = (t) => "(" + t[0] + "; " + t[1] + "; " + t[2] + ")";

function tripleList(triples) {
  return el("ul", { class: "triples" }, ...triples.map((t) => el("li", {}, tripleText(t))));
}

// ------------------------------------------------------------------------------------------ graph
function drawGraph(graph, caption) {
  $("graph-caption").textContent = caption + (graph.truncated ? " (cut at the node limit)" : "");
  const elements = [];
  for (const n of graph.nodes) {
    elements.push({ group: "nodes", data: { id: n.id, label: n.label, kind: n.kind },
                    classes: [n.kind, n.highlight ? "hl" : "", n.focus ? "focus" : ""].join(" ") });
  }
  for (const e of graph.edges) {
    elements.push({ group: "edges", data: { id: e.id, source: e.source, target: e.target, label: e.label },
                    classes: [e.kind, e.highlight ? "hl" : ""].join(" ") });
  }
  if (cy) cy.destroy();
  cy = cytoscape({
    container: $("graph"),
    elements: elements,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 12, "text-wrap": "wrap",
        "text-max-width": 120, "text-valign": "center", "background-color": "#d0e4f7", "border-width": 1,
        "border-color": "#6c8fb3", width: (n) => Math.min(130, 16 + 7 * n.data("label").length),
        height: (n) => 20 + 14 * Math.floor(7 * n.data("label").length / 125), shape: "round-rectangle" } },
      { selector: "node.value", style: { "background-color": "#e9ecef", "border-color": "#adb5bd" } },
      { selector: "node.passage", style: { "background-color": "#fff3bf", "border-color": "#e0b400",
        shape: "rectangle", "font-style": "italic" } },
      { selector: "node.focus", style: { "border-width": 3, "border-color": "#0b5cad" } },
      { selector: "node.hl", style: { "background-color": "#ffd8c2", "border-color": "#d9480f", "border-width": 3 } },
      { selector: "node:selected", style: { "border-width": 4, "border-color": "#f59f00" } },
      { selector: "edge", style: { label: "data(label)", "font-size": 11, "curve-style": "bezier",
        "target-arrow-shape": "triangle", width: 1.5, "line-color": "#8aa1b6", "target-arrow-color": "#8aa1b6",
        "text-background-color": "#fff", "text-background-opacity": 0.85, "text-background-padding": 1,
        color: "#1d232a" } },
      { selector: "edge.source", style: { "line-style": "dashed", "line-color": "#e0b400",
        "target-arrow-shape": "none", width: 1 } },
      { selector: "edge.hl", style: { "line-color": "#d9480f", "target-arrow-color": "#d9480f", width: 3.5 } },
    ],
    layout: { name: "cose", animate: false, nodeRepulsion: 12000, idealEdgeLength: 110, randomize: false,
              padding: 12 },
  });
  window.gearagGraph = cy;  // for tests and the console
  cy.on("dbltap", "node.entity, node.value", (evt) => explore(evt.target.data("label")));
  cy.on("tap", "node.passage", (evt) => focusPassage(evt.target.id()));
}

async function explore(entity, depth) {
  entity = (entity || "").trim();
  if (!entity) return;
  $("entity").value = entity;
  depth = depth || $("depth").value;
  try {
    const graph = await getJSON("/v1/graph?entity=" + encodeURIComponent(entity) + "&depth=" +
                                encodeURIComponent(depth) + "&max_nodes=80");
    drawGraph(graph, "Neighbourhood of " + entity + " (" + depth + " hop" + (depth === "1" ? "" : "s") + ")");
  } catch (err) {
    setStatus(err.message, true);
  }
}

let suggestTimer = null;
function suggest() {
  clearTimeout(suggestTimer);
  const q = $("entity").value.trim();
  if (q.length < 2) return;
  suggestTimer = setTimeout(async () => {
    try {
      const found = await getJSON("/v1/entities?limit=12&q=" + encodeURIComponent(q));
      $("entity-list").replaceChildren(...found.entities.map((e) => el("option", { value: e.name })));
    } catch (err) { /* suggestions are optional */ }
  }, 200);
}

// ------------------------------------------------------------------------------------------ results
function renderStep(step, graph) {
  const r = step.reasoning || {};
  const verdict = r.answerable ? "answerable: " + (r.answer || "") : "not yet answerable";
  const show = el("button", { type: "button", class: "secondary",
                              onclick: () => drawGraph(graph, "Step " + step.step + ": beams, proximal triples and gist memory") },
                   "Show graph");
  const item = el("li", { "data-step": String(step.step) },
    el("div", {}, el("strong", {}, "Step " + step.step + " "), el("span", { class: "muted" },
       "(" + step.seconds + " s) "), show),
    el("div", { class: "query" }, "Query: " + step.query),
    el("details", {}, el("summary", {}, "Proximal triples (" + step.proximal.length + ")"),
       tripleList(step.proximal)),
    el("details", { open: "" }, el("summary", {}, "Added to the gist memory (" + step.gist_added.length + ")"),
       tripleList(step.gist_added)),
    el("details", {}, el("summary", {}, "Beams (" + step.paths.length + ")"),
       el("ul", { class: "triples" }, ...step.paths.map((p) => el("li", {}, p)))),
    el("p", {}, el("em", {}, verdict + ". "), r.text || ""),
    r.next_query ? el("p", { class: "muted" }, "Next query: " + r.next_query) : null,
  );
  $("steps").append(item);
  drawGraph(graph, "Step " + step.step + ": beams, proximal triples and gist memory (highlighted)");
}

function focusPassage(nodeId) {
  const item = document.querySelector('#passages li[data-node="' + CSS.escape(nodeId) + '"]');
  if (!item) return;
  const details = item.querySelector("details");
  if (details) details.open = true;
  item.querySelector("summary").focus();
}

function renderResult(result) {
  const box = $("answer-box");
  if (result.answer !== null && result.answer !== undefined) {
    box.hidden = false;
    $("answer").textContent = result.answer;
    $("answer-label").textContent = result.answer_label || "";
    $("evidence").replaceChildren(...(result.evidence || []).map((e) => el("li", {}, e)));
  } else {
    box.hidden = true;
  }
  // A ranking without per-passage scores (score_kind "rank") shows its ranks only; passages the answer rests
  // on say so.
  const ranked = result.score_kind === "rank";
  const passages = result.passages.map((p, i) => {
    const row = (result.graph && result.graph.nodes.find((n) => n.passage_id === p.id)) || null;
    const badges = [el("span", { class: "score" }, ranked ? "rank " + (i + 1) : "score " + p.score.toFixed(4))];
    if (p.evidence) badges.unshift(el("span", { class: "score" }, "\u2605 evidence"));
    return el("li", { "data-id": p.id, "data-node": row ? row.id : "" },
      el("details", {},
         el("summary", {}, el("strong", {}, "[" + (i + 1) + "] " + p.title), ...badges),
         el("p", {}, p.text)));
  });
  $("passages").replaceChildren(...passages);
  if (result.graph && result.graph.nodes.length) {
    drawGraph(result.graph, "Final beams and gist memory" + (result.evidence && result.evidence.length ?
      ", evidence chain highlighted" : ""));
  }
  const trace = result.trace || {};
  if (trace.kind === "expansion" && trace.proximal) {
    $("steps").append(el("li", {}, el("strong", {}, "Graph expansion"),
      el("details", { open: "" }, el("summary", {}, "Proximal triples (" + trace.proximal.length + ")"),
         tripleList(trace.proximal))));
  }
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const body = { question: question, method: $("method").value, top_k: Number($("top-k").value) || 5 };
  document.body.dataset.state = "running";
  $("ask").disabled = true;
  $("steps").replaceChildren();
  $("passages").replaceChildren();
  $("answer-box").hidden = true;
  setStatus("Asking " + body.method + "…");
  const started = performance.now();
  try {
    const response = await fetch("/v1/ask/stream", { method: "POST", headers: headers(true),
                                                      body: JSON.stringify(body) });
    if (!response.ok) throw new Error(await errorText(response));
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let done = false;
    while (!done) {
      const chunk = await reader.read();
      done = chunk.done;
      buffer += decoder.decode(chunk.value || new Uint8Array(), { stream: !done });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline).trim();
        buffer = buffer.slice(newline + 1);
        if (!line) continue;
        const event = JSON.parse(line);
        if (event.event === "step") {
          renderStep(event.step, event.graph);
          setStatus("Step " + event.step.step + " done…");
        } else if (event.event === "result") {
          renderResult(event.result);
        } else if (event.event === "error") {
          throw new Error(event.error.message);
        }
      }
    }
    setStatus("Done in " + ((performance.now() - started) / 1000).toFixed(2) + " s.");
    document.body.dataset.state = "done";
  } catch (err) {
    setStatus(err.message, true);
    document.body.dataset.state = "error";
  } finally {
    $("ask").disabled = false;
  }
}

async function loadIndex() {
  try {
    const info = await getJSON("/v1/index");
    const c = info.counts;
    $("index-summary").textContent = c.passages + " passages, " + c.triples + " triples, " + c.entities +
      " entities · extractor " + info.extractor + " · embedder " + info.embedder + " · built " + info.created;
    const current = $("method").value;
    $("method").replaceChildren(...info.methods.map((m) => el("option", { value: m.name, title: m.help }, m.name)));
    $("method").value = info.methods.some((m) => m.name === current) ? current : info.methods[0].name;
    document.body.dataset.index = "loaded";
  } catch (err) {
    $("index-summary").textContent = "Could not load the index: " + err.message +
      " (enter the API key if the server needs one)";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = sessionStorage.getItem(KEY_STORE) || "";
  $("api-key").addEventListener("change", () => {
    sessionStorage.setItem(KEY_STORE, $("api-key").value.trim());
    loadIndex();
  });
  $("ask-form").addEventListener("submit", ask);
  $("explore-form").addEventListener("submit", (e) => { e.preventDefault(); explore($("entity").value); });
  $("entity").addEventListener("input", suggest);
  $("graph").tabIndex = 0;
  $("graph").addEventListener("keydown", (e) => {
    if (!cy) return;
    const selected = cy.$("node:selected");
    const nodes = cy.nodes().sort((a, b) => a.data("label").localeCompare(b.data("label")));
    if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      e.preventDefault();
      const i = selected.length ? nodes.indexOf(selected[0]) : -1;
      const next = nodes[(i + (e.key === "ArrowRight" ? 1 : nodes.length - 1)) % nodes.length];
      cy.nodes().unselect();
      next.select();
      $("graph-caption").textContent = "Selected: " + next.data("label") + " (" + next.data("kind") + ")";
    } else if (e.key === "Enter" && selected.length) {
      e.preventDefault();
      if (selected.data("kind") === "passage") focusPassage(selected.id());
      else explore(selected.data("label"));
    }
  });
  loadIndex();
  $("question").focus();
});
