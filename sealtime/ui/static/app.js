// sealtime live view: polls /api/snapshot and draws the graph, tables and tick plot.
// Hand-written (no library, no CDN): the page works offline.
"use strict";
(function () {
  const $ = (s) => document.querySelector(s);
  const SVGNS = "http://www.w3.org/2000/svg";
  let last = null;          // the latest snapshot
  let version = -1;
  let openRows = null;      // {source, which} of the open late/errors panel

  function fmtTime(ms) {
    if (ms === null || ms === undefined) return "∞ (finished)";
    if (ms <= -4e18) return "−∞";
    const d = new Date(ms);
    if (isNaN(d.getTime())) return String(ms);
    return d.toISOString().replace("T", " ").replace("Z", "");
  }
  function shortTime(ms) {  // HH:MM:SS.mmm for edge labels
    if (ms === null || ms === undefined) return "∞";
    if (ms <= -4e18) return "−∞";
    return fmtTime(ms).slice(11);
  }
  function fmtLag(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms > 1e12) return "–";
    if (ms < 1000) return ms + " ms";
    if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
    return (ms / 60000).toFixed(1) + " min";
  }
  function fmtBytes(n) {
    if (n === null || n === undefined) return "–";
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
    return (n / 1048576).toFixed(1) + " MiB";
  }
  function fmtNum(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en"); }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  }
  function json(v) { return v === null || v === undefined ? "–" : esc(JSON.stringify(v)); }
  function el(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // ---------------------------------------------------------------- graph
  function drawGraph(s) {
    const svg = $("#graph");
    const W = 170, H = 38, DX = 200, DY = 86, PAD = 20;
    const xs = s.nodes.map((n) => n.x), layers = s.nodes.map((n) => n.layer);
    const minX = Math.min(...xs, 0), maxX = Math.max(...xs, 0), maxL = Math.max(...layers, 0);
    const width = (maxX - minX) * DX + W + 2 * PAD, height = maxL * DY + H + 2 * PAD;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.style.height = Math.min(height, 900) + "px";
    const pos = {};
    for (const n of s.nodes) pos[n.id] = { x: PAD + (n.x - minX) * DX, y: PAD + n.layer * DY };
    const byId = {};
    for (const n of s.nodes) byId[n.id] = n;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    for (const e of s.edges) {
      const a = pos[e.src], b = pos[e.dst];
      if (!a || !b) continue;
      const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
      const unread = byId[e.src] && !byId[e.src].read;
      svg.appendChild(el("path", {
        class: "edge" + (unread ? " unread" : ""),
        d: `M${x1},${y1} C${x1},${y1 + 30} ${x2},${y2 - 30} ${x2},${y2}`,
        "marker-end": "url(#arrow)",
      }));
      if (!unread) {
        const t = el("text", { class: "elabel", x: (x1 + x2) / 2 + 4, y: (y1 + y2) / 2 + 3,
                               "data-edge": `${e.src}-${e.dst}`, "data-frontier": e.frontier === null ? "" : e.frontier },
                     e.frontier === null ? "∞ (finished)" : `${shortTime(e.frontier)} (${fmtLag(e.lag_ms)})`);
        svg.appendChild(t);
      }
    }
    for (const n of s.nodes) {
      const p = pos[n.id];
      const cls = ["node", n.kind === "source" ? "source" : "", n.kind === "sink" ? "sink" : "",
                   n.read ? "" : "unread", n.sealed ? "active" : ""].join(" ");
      const g = el("g", { class: cls, transform: `translate(${p.x},${p.y})`, "data-id": n.id, "data-name": n.name });
      const title = el("title", {}, `#${n.id} ${n.kind} ${n.name}\ninput frontier ${fmtTime(n.frontier_in)}\noutput frontier ${fmtTime(n.frontier_out)}`);
      g.appendChild(title);
      g.appendChild(el("rect", { width: W, height: H, rx: 6 }));
      const label = n.name.length > 26 ? n.name.slice(0, 25) + "…" : n.name;
      g.appendChild(el("text", { x: 8, y: 16, class: "name" }, label));
      g.appendChild(el("text", { x: 8, y: 30, class: "kind" }, n.kind === "sink" ? "sink" : `#${n.id} ${n.kind}`));
      svg.appendChild(g);
    }
    const defs = el("defs", {});
    const m = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    m.appendChild(el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#94a3b8" }));
    defs.appendChild(m);
    svg.insertBefore(defs, svg.firstChild);
  }

  // ---------------------------------------------------------------- plot
  function drawPlot(s) {
    const svg = $("#plot");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const h = s.history;
    if (!h.length) return;
    const W = 600, H = 200, P = 6;
    const maxD = Math.max(...h.map((p) => p.seconds), 1e-3);
    const maxR = Math.max(...h.map((p) => p.rows), 1);
    const n = Math.max(h.length - 1, 1);
    const pts = (f, max) => h.map((p, i) => `${(P + (i / n) * (W - 2 * P)).toFixed(1)},${(H - P - (f(p) / max) * (H - 2 * P)).toFixed(1)}`).join(" ");
    svg.appendChild(el("polyline", { class: "dur", points: pts((p) => p.seconds, maxD) }));
    svg.appendChild(el("polyline", { class: "rows", points: pts((p) => p.rows, maxR) }));
    const lastP = h[h.length - 1];
    $("#plot-legend").textContent =
      `last ${h.length} ticks (#${h[0].tick}–#${lastP.tick}); max tick ${(maxD * 1000).toFixed(0)} ms, ` +
      `max ${fmtNum(maxR)} rows/tick; latest ${(lastP.seconds * 1000).toFixed(0)} ms, ${fmtNum(lastP.rows)} rows`;
  }

  // ---------------------------------------------------------------- tables
  function healthClass(h) { return h ? "health-" + String(h).split(":")[0] : ""; }
  function drawSources(s) {
    const rows = s.sources.map((src) => `
      <tr data-source="${esc(src.name)}">
        <td>${esc(src.name)}</td>
        <td class="${healthClass(src.health)}">${esc(src.health || "–")}</td>
        <td class="frontier" data-frontier="${src.frontier === null ? "" : src.frontier}">${fmtTime(src.frontier)}</td>
        <td>${fmtLag(src.lag_ms)}</td>
        <td>${json(src.position)}</td>
        <td>${json(src.acknowledged)}</td>
        <td>${fmtNum(src.rows)}</td>
        <td>${fmtNum(src.rows_tick)}</td>
        <td><a class="late-link ${src.late ? "late" : ""}" data-source="${esc(src.name)}" data-which="late">${fmtNum(src.late)}</a></td>
        <td><a class="errors-link ${src.errors ? "late" : ""}" data-source="${esc(src.name)}" data-which="errors">${fmtNum(src.errors)}</a></td>
      </tr>`).join("");
    $("#sources tbody").innerHTML = rows;
  }
  function drawOperators(s, sizes) {
    $("#operators tbody").innerHTML = s.nodes.filter((n) => n.kind !== "sink").map((n) => `
      <tr data-op="${n.id}" class="${n.read ? "" : "muted"}">
        <td>${n.id}</td><td>${esc(n.name)}</td><td>${esc(n.kind)}</td>
        <td>${fmtTime(n.frontier_in)}</td><td>${fmtTime(n.frontier_out)}</td><td>${fmtLag(n.lag_ms)}</td>
        <td>${n.sealed ? (n.sealed[0] === null ? "−∞" : shortTime(n.sealed[0])) + " → " + shortTime(n.sealed[1]) : "–"}</td>
        <td>${n.rows_tick === null ? "–" : fmtNum(n.rows_tick)}</td>
        <td>${n.stateful ? fmtBytes(sizes[String(n.id)]) : "–"}</td>
      </tr>`).join("");
  }
  function drawPubs(s) {
    $("#pubs tbody").innerHTML = s.publications.length ? s.publications.map((p) => `
      <tr><td>${esc(p.topic)}</td><td>${esc(p.mode)}</td><td>${esc(p.addresses.join(", "))}</td>
      <td>${p.subscribers}</td><td>${esc(p.queues.map((q) => Object.entries(q).map(([k, v]) => k + ": " + v).join(", ") || "–").join(" | "))}</td></tr>`).join("")
      : `<tr><td colspan="5" class="muted">no publications</td></tr>`;
  }
  function drawBindings(s) {
    const names = s.sources.map((x) => x.name);
    $("#bindings thead").innerHTML = "<tr><th>tick</th><th>into_time</th>" +
      names.map((n) => `<th>${esc(n)} position</th><th>${esc(n)} frontier</th><th>${esc(n)} rows</th>`).join("") + "</tr>";
    $("#bindings tbody").innerHTML = s.bindings.slice().reverse().map((b) => "<tr>" +
      `<td>${b.tick}</td><td>${fmtTime(b.into_time)}</td>` +
      names.map((n) => { const p = b.sources[n] || {}; return `<td>${json(p.position)}</td><td>${fmtTime(p.frontier)}</td><td>${fmtNum(p.rows)}</td>`; }).join("") +
      "</tr>").join("");
  }

  async function showRows(source, which) {
    openRows = { source, which };
    const r = await fetch(`/api/sources/${encodeURIComponent(source)}/${which}?limit=20`);
    const data = await r.json();
    const panel = $("#rows-panel");
    panel.hidden = false;
    panel.dataset.source = source;
    panel.dataset.which = which;
    $("#rows-title").textContent = `latest ${which} rows of ${source} (${data.total} in all)`;
    const cols = data.rows.length ? Object.keys(data.rows[0]) : [];
    $("#rows-table thead").innerHTML = "<tr>" + cols.map((c) => `<th>${esc(c)}</th>`).join("") + "</tr>";
    $("#rows-table tbody").innerHTML = data.rows.map((row) =>
      "<tr>" + cols.map((c) => `<td>${esc(row[c] === null ? "null" : row[c])}</td>`).join("") + "</tr>").join("")
      || `<tr><td class="muted">none</td></tr>`;
  }
  document.addEventListener("click", (ev) => {
    const a = ev.target.closest("a[data-which]");
    if (a) { ev.preventDefault(); showRows(a.dataset.source, a.dataset.which); }
  });

  async function drawCheckpoints() {
    const r = await fetch("/api/checkpoints");
    const data = await r.json();
    $("#checkpoints tbody").innerHTML = data.checkpoints.slice().reverse().map((c) => `
      <tr><td>${c.tick}</td><td>${esc(c.directory)}</td><td>${c.operators}</td><td>${c.pending}</td>
      <td>${esc(Object.entries(c.truncate).map(([k, v]) => k + ": " + fmtTime(v)).join(", "))}</td></tr>`).join("")
      || `<tr><td colspan="5" class="muted">no checkpoint yet</td></tr>`;
  }

  // ---------------------------------------------------------------- routing + polling
  function route() {
    const page = (location.hash.replace(/^#\/?/, "") || "main").split("/")[0];
    for (const p of ["main", "bindings", "checkpoints"]) $("#page-" + p).hidden = p !== page;
    if (page === "checkpoints") drawCheckpoints();
    if (last) render(last);
  }
  window.addEventListener("hashchange", route);

  function render(s) {
    $("#flow-name").textContent = s.flow;
    $("#tick").textContent = s.tick;
    $("#clock").textContent = s.into_time === null ? "–" : fmtTime(s.into_time);
    const f = $("#flow-frontier");
    f.textContent = s.tick ? fmtTime(s.frontier) : "–";
    f.dataset.frontier = s.frontier === null ? "" : s.frontier;
    drawGraph(s);
    drawPlot(s);
    drawSources(s);
    drawOperators(s, s.state_bytes || {});
    drawPubs(s);
    drawBindings(s);
  }

  async function poll() {
    try {
      const r = await fetch("/api/snapshot");
      const s = await r.json();
      $("#updated").textContent = "updated " + new Date(s.published_at * 1000).toLocaleTimeString();
      if (s.version !== version) {
        version = s.version;
        last = s;
        render(s);
        if (openRows) showRows(openRows.source, openRows.which);
        if (!$("#page-checkpoints").hidden) drawCheckpoints();
      }
    } catch (e) {
      $("#updated").textContent = "disconnected";
    }
    setTimeout(poll, 500);
  }
  route();
  poll();
})();
