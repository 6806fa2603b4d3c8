"use strict";
// The Strata web console: fetches the JSON views under /webui/api and renders them as tables.
// Data goes into the page as text nodes only (names come from users), never as HTML.

const API = "/webui/api";
const REFRESH_MS = 5000;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(child == null ? "" : String(child)));
  }
  return node;
}

function counts(obj) {
  const parts = Object.entries(obj || {}).map(([k, v]) => `${k}: ${v}`);
  return parts.length ? parts.join(", ") : "none";
}

function flag(ok, yes, no) {
  return el("span", { class: ok ? "good" : "bad" }, ok ? yes : no);
}

function time(seconds) {
  return seconds ? new Date(seconds * 1000).toISOString().replace("T", " ").slice(0, 19) : "";
}

// columns: [header, row => text or Node]; rowAttrs: row => attributes of its <tr>.
function fill(id, columns, rows, empty, rowAttrs) {
  const table = document.getElementById(id);
  table.replaceChildren();
  table.append(el("tr", {}, ...columns.map(([header]) => el("th", {}, header))));
  if (!rows.length) {
    table.append(el("tr", {}, el("td", { class: "empty", colspan: String(columns.length) }, empty)));
    return;
  }
  for (const row of rows) {
    table.append(el("tr", rowAttrs ? rowAttrs(row) : {}, ...columns.map(([, cell]) => el("td", {}, cell(row)))));
  }
}

function status(view, text) {
  document.querySelector(`#${view} .status`).textContent = text || "";
}

const RENDER = {
  cluster(doc) {
    const roles = document.getElementById("roles");
    roles.replaceChildren(...Object.entries(doc.roles).map(([role, n]) => el("li", { "data-role": role }, `${role} × ${n}`)));
    fill("sessions-table", [
      ["Role", (s) => s.role],
      ["Server id", (s) => s.server_id],
      ["Address", (s) => s.address],
      ["Leader", (s) => (s.leader ? "yes" : "")],
    ], doc.sessions, "no sessions");
    fill("pchannels-table", [
      ["Pchannel", (p) => p.name],
      ["State", (p) => flag(p.state === "ASSIGNED", p.state, p.state)],
      ["Streaming node", (p) => (p.node_id == null ? "" : `${p.node_id} (${p.address})`)],
      ["Term", (p) => (p.term == null ? "" : p.term)],
    ], doc.pchannels, "no pchannels");
  },
  collections(doc) {
    const rows = doc.databases.flatMap((db) => db.collections.map((c) => ({ db: db.name, ...c })));
    const empty = doc.databases.length ? `no collections (databases: ${doc.databases.map((d) => d.name).join(", ")})` : "no databases";
    fill("collections-table", [
      ["Database", (c) => c.db],
      ["Collection", (c) => c.name],
      ["Id", (c) => c.id],
      ["Load state", (c) => (c.load_state === "NotLoad" ? c.load_state
        : flag(c.load_state === "Loaded", c.load_state, `${c.load_state} ${c.load_progress}%`))],
      ["Replicas", (c) => c.replicas],
      ["Rows", (c) => c.rows],
      ["Segments", (c) => counts(c.segments)],
      ["Partitions", (c) => c.partitions.join(", ")],
      ["Schema", (c) => c.fields.map((f) => `${f.name}: ${f.type}${f.dim ? `(${f.dim})` : ""}${f.primary ? " pk" : ""}`).join(", ")],
    ], rows, empty, (c) => ({ "data-collection": c.name }));
  },
  querynodes(doc) {
    fill("querynodes-table", [
      ["Node id", (n) => n.node_id],
      ["Address", (n) => n.address],
      ["Delegators", (n) => n.delegators.length],
      ["Sealed segments", (n) => n.segments],
      ["Rows loaded", (n) => n.rows],
    ], doc.nodes, "no query nodes", (n) => ({ "data-node": String(n.node_id) }));
    const delegators = doc.nodes.flatMap((n) => n.delegators.map((d) => ({ node_id: n.node_id, ...d })));
    fill("delegators-table", [
      ["Node id", (d) => d.node_id],
      ["Collection", (d) => d.collection],
      ["Vchannel", (d) => d.vchannel],
      ["Replica", (d) => d.replica_id],
      ["Serviceable", (d) => flag(d.serviceable, "yes", d.error || "no")],
    ], delegators, "no delegators (no collection loaded)");
    fill("replicas-table", [
      ["Collection", (r) => r.collection],
      ["Replica", (r) => r.replica_id],
      ["Nodes", (r) => r.node_ids.join(", ")],
      ["Shard leaders", (r) => r.shards.map((s) => `${s.vchannel} → ${s.leader_id}`).join(", ")],
    ], doc.replicas, "no replicas");
  },
  jobs(doc) {
    status("jobs", `${doc.running} running, ${doc.finished} finished`);
    fill("jobs-table", [
      ["Job", (j) => j.job_id],
      ["Kind", (j) => j.kind],
      ["Collection", (j) => j.collection || j.collection_id],
      ["State", (j) => flag(j.state !== "FAILED", j.state, j.state)],
      ["Created (UTC)", (j) => time(j.created_at)],
      ["Seconds", (j) => j.seconds],
      ["Inputs → outputs", (j) => `${j.inputs} → ${j.outputs}`],
      ["Rows", (j) => j.rows],
      ["Error", (j) => j.error],
    ], doc.jobs, "no jobs");
  },
  slow_requests(doc) {
    status("slow_requests", `requests of at least ${doc.threshold_ms} ms, the last ${doc.capacity} kept`);
    fill("slow-requests-table", [
      ["Finished (UTC)", (r) => time(r.at)],
      ["Method", (r) => r.method],
      ["Database", (r) => r.db],
      ["Collection", (r) => r.collection],
      ["Status", (r) => flag(r.status === "success", r.status, `${r.status} (${r.code})`)],
      ["Latency ms", (r) => r.latency_ms],
      ["Client", (r) => r.peer],
    ], doc.requests, "no slow requests");
  },
};

async function getJSON(url) {
  const answer = await fetch(url, { cache: "no-store" });
  let doc = null;
  try {
    doc = await answer.json();
  } catch (err) {
    throw new Error(`${url}: ${answer.status}, not JSON`);
  }
  if (!answer.ok) throw new Error(doc && doc.error ? doc.error : `${url}: ${answer.status}`);
  return doc;
}

async function refresh() {
  let served = [];
  try {
    const index = await getJSON(API);
    served = index.views;
    document.getElementById("served-by").textContent = `served by ${index.role}`;
  } catch (err) {
    document.getElementById("served-by").textContent = `console unavailable: ${err.message}`;
  }
  await Promise.all(Object.keys(RENDER).map(async (view) => {
    if (!served.includes(view)) {
      status(view, "not served by this process: open the console on a proxy's operations port for every view");
      return;
    }
    try {
      const doc = await getJSON(`${API}/${view}`);
      status(view, "");
      RENDER[view](doc);
    } catch (err) {
      status(view, `unavailable: ${err.message}`);
    }
  }));
  document.getElementById("updated").textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
  document.body.setAttribute("data-loaded", "true");
}

refresh();
setInterval(refresh, REFRESH_MS);
