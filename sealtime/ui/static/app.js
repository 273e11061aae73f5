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
  function fmtCount(n) {  // compact: 1,234 / 12.3k / 4.5M
    if (n === null || n === undefined) return "n/a";
    if (Math.abs(n) < 100000) return fmtNum(n);
    if (Math.abs(n) < 1e7) return (n / 1000).toFixed(1) + "k";
    return (n / 1e6).toFixed(1) + "M";
  }
  function fmtMs(sec) {
    if (sec === null || sec === undefined) return "n/a";
    const ms = sec * 1000;
    return ms < 10 ? ms.toFixed(1) + " ms" : ms < 1000 ? ms.toFixed(0) + " ms" : (ms / 1000).toFixed(2) + " s";
  }
  // The per-operator lines of a node box (and why a number is missing).
  function countLines(n) {
    const c = n.counts;
    if (n.kind === "sink") return [n.sealed ? `committed up to ${shortTime(n.sealed[1])}` : "nothing committed this tick"];
    if (!c) return ["no tick yet"];
    if (c.counting === "kernel") return [
      `rows in ${fmtCount(c.rows_in)} → out ${fmtCount(c.rows_out)}`,
      `state ${fmtCount(c.state_rows)} · kernel ${fmtMs(c.kernel_seconds)}`,
    ];
    if (c.counting === "source") return [`read ${fmtCount(c.rows_in)} rows`, `plan ${fmtMs(c.plan_seconds)}`];
    if (c.counting === "fused") return ["fused into consumer's stage", `plan ${fmtMs(c.plan_seconds)}`];
    return ["rows not counted (Spark-native)", `plan ${fmtMs(c.plan_seconds)}`];
  }
  const WHY = {
    kernel: "counted inside the operator's Spark tasks (no extra job); n/a: not exact here " +
            "(a windowed aggregate's kernel sees pre-combined partials, or its rows are aggregated again)",
    source: "rows read from the source this tick",
    fused: "a stateless expression Spark runs inside its consumer's stage: counting it would need a job of its own",
    native: "a stateful operator on plain Spark plans: not counted",
  };

  function drawGraph(s) {
    const svg = $("#graph");
    const W = 226, H = 76, UW = 150, UH = 34, GAP = 18, DY = 112, PAD = 16;
    // Unread stateless outputs (side outputs nobody reads) cost nothing: small boxes.
    // An unread stateful operator still runs (its state must advance): a full box.
    const full = (n) => n.read || n.stateful;
    const size = (n) => full(n) ? [W, n.kind === "sink" ? 62 : H] : [UW, UH];
    // Columns from the Python layout; pixel centres packed by the boxes' real widths.
    const layers = {};
    for (const n of s.nodes) (layers[n.layer] = layers[n.layer] || []).push(n);
    const cx = {};
    for (const key in layers) {
      const row = layers[key].slice().sort((a, b) => a.x - b.x);
      const want = row.map((n) => n.x * (W + GAP));
      const xs = [];
      row.forEach((n, i) => {
        const x = i ? Math.max(want[i], xs[i - 1] + (size(row[i - 1])[0] + size(n)[0]) / 2 + GAP) : want[i];
        xs.push(x);
      });
      const shift = want.reduce((a, b) => a + b, 0) / row.length - xs.reduce((a, b) => a + b, 0) / row.length;
      row.forEach((n, i) => { cx[n.id] = xs[i] + shift; });
    }
    const lefts = s.nodes.map((n) => cx[n.id] - size(n)[0] / 2), rights = s.nodes.map((n) => cx[n.id] + size(n)[0] / 2);
    const minX = Math.min(...lefts, 0), maxX = Math.max(...rights, 0);
    const maxL = Math.max(...s.nodes.map((n) => n.layer), 0);
    const width = maxX - minX + 2 * PAD, height = maxL * DY + H + 2 * PAD;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.style.height = Math.min(height, 1000) + "px";
    svg.style.maxWidth = width + "px";
    const pos = {}, byId = {};
    for (const n of s.nodes) {
      const [w, h] = size(n);
      pos[n.id] = { x: PAD + cx[n.id] - w / 2 - minX, y: PAD + n.layer * DY + (H - h) / 2, w, h };
      byId[n.id] = n;
    }
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    // Edges: from the bottom of the input to the top of the node; several inputs of one
    // node arrive at distinct points. Each edge's frontier (= its input's output
    // frontier) is in its tooltip and in the input's box.
    for (const e of s.edges) {
      const a = pos[e.src], b = pos[e.dst], dst = byId[e.dst];
      if (!a || !b) continue;
      const k = dst.inputs.length, i = dst.inputs.indexOf(e.src);
      const x1 = a.x + a.w / 2, y1 = a.y + a.h, x2 = b.x + b.w * (i + 1) / (k + 1), y2 = b.y;
      const unread = byId[e.src] && !byId[e.src].read;
      const path = el("path", {
        class: "edge" + (unread ? " unread" : ""),
        d: `M${x1},${y1} C${x1},${y1 + 40} ${x2},${y2 - 40} ${x2},${y2}`,
        "marker-end": "url(#arrow)",
        "data-edge": `${e.src}-${e.dst}`, "data-frontier": e.frontier === null ? "" : e.frontier,
      });
      path.appendChild(el("title", {}, `${byId[e.src].name} → ${dst.name}\nfrontier ${fmtTime(e.frontier)} (lag ${fmtLag(e.lag_ms)})`));
      svg.appendChild(path);
    }
    for (const n of s.nodes) {
      const p = pos[n.id];
      const cls = ["node", n.kind === "source" ? "source" : "", n.kind === "sink" ? "sink" : "",
                   full(n) ? "" : "unread", n.sealed ? "active" : ""].join(" ");
      const g = el("g", { class: cls, transform: `translate(${p.x},${p.y})`, "data-id": n.id, "data-name": n.name });
      const c = n.counts || {};
      if (c.counting) {
        g.dataset.counting = c.counting;
        for (const [k, v] of [["rowsIn", c.rows_in], ["rowsOut", c.rows_out], ["stateRows", c.state_rows]])
          if (v !== null && v !== undefined) g.dataset[k] = v;
      }
      const tip = [`#${n.id} ${n.kind} ${n.name}`, `input frontier ${fmtTime(n.frontier_in)}`,
                   `output frontier ${fmtTime(n.frontier_out)} (lag ${fmtLag(n.lag_ms)})`];
      if (c.counting) tip.push(`rows: ${WHY[c.counting] || c.counting}`,
        `this tick: in ${fmtCount(c.rows_in)}, out ${fmtCount(c.rows_out)}, state ${fmtCount(c.state_rows)}, ` +
        `kernel ${fmtMs(c.kernel_seconds)}, plan ${fmtMs(c.plan_seconds)}`,
        `since the view started: ${c.steps} steps, in ${fmtCount(c.rows_in_total)}, out ${fmtCount(c.rows_out_total)}`);
      g.appendChild(el("title", {}, tip.join("\n")));
      g.appendChild(el("rect", { width: p.w, height: p.h, rx: 6 }));
      const room = Math.floor((p.w - 14) / 6.6);
      const label = n.name.length > room ? n.name.slice(0, room - 1) + "…" : n.name;
      g.appendChild(el("text", { x: 8, y: 15, class: "name" }, label));
      const kind = n.kind === "sink" ? "sink" : `#${n.id} ${n.kind}`;
      if (!full(n)) { g.appendChild(el("text", { x: 8, y: 28, class: "kind" }, kind + " · unread")); svg.appendChild(g); continue; }
      g.appendChild(el("text", { x: 8, y: 28, class: "kind" }, kind + (n.read ? "" : " · no reader")));
      const fr = n.frontier_out === null ? "⟶ ∞ (finished)" : `⟶ ${shortTime(n.frontier_out)} · lag ${fmtLag(n.lag_ms)}`;
      g.appendChild(el("text", { x: 8, y: 42, class: "frontier", "data-frontier": n.frontier_out === null ? "" : n.frontier_out }, fr));
      countLines(n).forEach((line, i) => g.appendChild(el("text", { x: 8, y: 56 + 13 * i, class: "counts " + (c.counting || "") }, line)));
      svg.appendChild(g);
    }
    const defs = el("defs", {});
    const m = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" });
    m.appendChild(el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#94a3b8" }));
    defs.appendChild(m);
    svg.insertBefore(defs, svg.firstChild);
  }

  // ---------------------------------------------------------------- plot
  // Tick duration as bars (left axis), rows per tick as a line with a dot per tick
  // (right axis): one or two ticks already show. Slots: at least 30, so bars keep
  // their width while history fills up.
  function drawPlot(s) {
    const svg = $("#plot");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const h = s.history;
    if (!h.length) { $("#plot-legend").textContent = "no tick yet"; return; }
    const W = 600, H = 200, L = 44, R = 44, T = 10, B = 18;
    const maxD = Math.max(...h.map((p) => p.seconds), 1e-3);
    const maxR = Math.max(...h.map((p) => p.rows), 1);
    const slots = Math.max(h.length, 30), slot = (W - L - R) / slots;
    const y = (v, max) => H - B - (v / max) * (H - T - B);
    for (const [frac, cls] of [[0, "axis"], [0.5, "grid"], [1, "grid"]]) {
      const yy = y(frac, 1);
      svg.appendChild(el("line", { class: cls, x1: L, x2: W - R, y1: yy, y2: yy }));
      if (frac) {
        svg.appendChild(el("text", { class: "ylab dur", x: L - 4, y: yy + 3, "text-anchor": "end" }, fmtMs(maxD * frac)));
        svg.appendChild(el("text", { class: "ylab rows", x: W - R + 4, y: yy + 3 }, fmtCount(Math.round(maxR * frac))));
      }
    }
    const pts = [];
    h.forEach((p, i) => {
      const x0 = L + i * slot, yb = y(p.seconds, maxD);
      const bar = el("rect", { class: "dur", x: x0 + slot * 0.15, width: Math.max(slot * 0.7, 1), y: yb, height: Math.max(H - B - yb, 1) });
      bar.appendChild(el("title", {}, `tick ${p.tick}: ${fmtMs(p.seconds)}, ${fmtNum(p.rows)} rows`));
      svg.appendChild(bar);
      pts.push([x0 + slot / 2, y(p.rows, maxR)]);
    });
    svg.appendChild(el("polyline", { class: "rows", points: pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(" ") }));
    for (const [a, b] of pts) svg.appendChild(el("circle", { class: "rows", cx: a.toFixed(1), cy: b.toFixed(1), r: 2.5 }));
    svg.appendChild(el("text", { class: "xlab", x: L, y: H - 4 }, `#${h[0].tick}`));
    if (h.length > 1)
      svg.appendChild(el("text", { class: "xlab", x: L + (h.length - 0.5) * slot, y: H - 4, "text-anchor": "middle" }, `#${h[h.length - 1].tick}`));
    const lastP = h[h.length - 1];
    $("#plot-legend").textContent =
      `last ${h.length} tick${h.length === 1 ? "" : "s"} (#${h[0].tick}–#${lastP.tick}); max tick ${fmtMs(maxD)}, ` +
      `max ${fmtNum(maxR)} rows/tick; latest ${fmtMs(lastP.seconds)}, ${fmtNum(lastP.rows)} rows`;
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
    $("#operators tbody").innerHTML = s.nodes.filter((n) => n.kind !== "sink").map((n) => {
      const c = n.counts || {};
      const why = esc(WHY[c.counting] || "");
      const num = (cls, v) => `<td class="${cls}" data-value="${v === null || v === undefined ? "" : v}" title="${why}">${fmtCount(v)}</td>`;
      const rows = c.counting === "kernel" || c.counting === "source"
        ? num("rows-in", c.rows_in) + num("rows-out", c.rows_out)
        : `<td class="rows-in muted" colspan="2" title="${why}">${c.counting ? esc(c.counting) : "–"}</td>`;
      return `
      <tr data-op="${n.id}" data-name="${esc(n.name)}" class="${n.read || n.stateful ? "" : "muted"}">
        <td>${n.id}</td><td>${esc(n.name)}</td><td>${esc(n.kind)}</td>
        <td title="${fmtTime(n.frontier_in)}">${shortTime(n.frontier_in)}</td><td title="${fmtTime(n.frontier_out)}">${shortTime(n.frontier_out)}</td><td>${fmtLag(n.lag_ms)}</td>
        <td>${n.sealed ? (n.sealed[0] === null ? "−∞" : shortTime(n.sealed[0])) + " → " + shortTime(n.sealed[1]) : "–"}</td>
        ${rows}
        ${c.counting === "kernel" ? num("state-rows", c.state_rows) : "<td>–</td>"}
        <td>${n.stateful ? fmtBytes(sizes[String(n.id)]) : "–"}</td>
        <td>${c.counting === "kernel" ? fmtMs(c.kernel_seconds) : "–"}</td>
        <td>${c.counting ? fmtMs(c.plan_seconds) : "–"}</td>
        <td>${c.steps === undefined ? "–" : fmtNum(c.steps)}</td>
      </tr>`;
    }).join("");
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
