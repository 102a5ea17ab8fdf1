// The observer page: draws a snapshot, then polls api/snapshot.
// Everything is written with textContent or setAttribute: nothing from the
// server is parsed as HTML. The charts and the graph are SVG drawn here.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token");
  const withToken = (href) => token ? href + "?token=" + encodeURIComponent(token) : href;
  for (const a of document.querySelectorAll("a.json")) a.href = withToken(a.getAttribute("href"));

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  const NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
    return e;
  }
  function fill(id, rows) {
    document.querySelector("#" + id + " tbody").replaceChildren(...rows);
  }
  function time(t) { return t ? new Date(t).toLocaleTimeString() : ""; }
  // num: a compact number for axes and legends (3 significant digits).
  function num(v) {
    const a = Math.abs(v);
    const p3 = (x) => x.toPrecision(3).replace(/\.0+$|(\.\d*?)0+$/, "$1");
    if (a >= 1e9) return p3(v / 1e9) + "G";
    if (a >= 1e6) return p3(v / 1e6) + "M";
    if (a >= 1e4) return p3(v / 1e3) + "k";
    if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
    return p3(v);
  }
  function span(ms) {
    if (ms < 1000) return Math.round(ms) + "ms";
    const s = Math.round(ms / 1000);
    return s >= 60 ? Math.floor(s / 60) + "m" + (s % 60 ? " " + (s % 60) + "s" : "") : s + "s";
  }
  function hist(values, cls) {
    const top = Math.max(1, ...values);
    const h = el("div", { class: "hist " + (cls || "") });
    values.forEach((v, i) => {
      const b = el("div", { class: "bar", title: "bucket " + i + ": " + v });
      b.style.height = (v ? Math.max(2, Math.round(100 * Math.log1p(v) / Math.log1p(top))) : 0) + "%";
      h.append(b);
    });
    return h;
  }

  // Charts: one SVG per chart, a polyline per line, the y axis from 0 to
  // a round maximum, the x axis over the whole window kept.
  const colors = {
    sent: "#2f6fd0", received: "#2a9d4b", "dead letters": "#c62828",
    made: "#2f6fd0", answered: "#2a9d4b",
    not_executed: "#e0a000", may_have_executed: "#c62828", executed: "#7b3fa0",
  };
  const palette = ["#2f6fd0", "#2a9d4b", "#e07b00", "#7b3fa0"];
  function roundUp(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  function chart(c, at, every, points) {
    const W = 320, H = 130, L = 38, R = 6, T = 8, B = 18;
    const end = at.length ? at[at.length - 1] : Date.now();
    const start = end - every * (points - 1);
    const x = (t) => L + (W - L - R) * Math.max(0, t - start) / Math.max(1, end - start);
    let top = 0;
    for (const l of c.lines) for (const v of l.values) top = Math.max(top, v);
    top = roundUp(top);
    const y = (v) => T + (H - T - B) * (1 - v / top);
    const g = svg("svg", { class: "chart", viewBox: "0 0 " + W + " " + H, "data-chart": c.name, "data-points": at.length, role: "img" });
    g.append(svg("title", {}, c.title));
    for (const f of [0, 0.5, 1]) {
      const yy = y(top * f);
      g.append(svg("line", { class: "grid", x1: L, x2: W - R, y1: yy, y2: yy }));
      g.append(svg("text", { class: "axis", x: L - 4, y: yy + 3, "text-anchor": "end" }, num(top * f)));
    }
    g.append(svg("text", { class: "axis", x: L, y: H - 4 }, "-" + span(end - start)));
    g.append(svg("text", { class: "axis", x: W - R, y: H - 4, "text-anchor": "end" }, "now"));
    c.lines.forEach((l, i) => {
      const pts = l.values.map((v, j) => x(at[j]).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
      g.append(svg("polyline", {
        class: "line", points: pts, stroke: colors[l.label] || palette[i % palette.length],
        "data-line": l.label, "data-max": Math.max(0, ...l.values),
      }));
    });
    const legend = el("div", { class: "legend" }, ...c.lines.map((l, i) => {
      const last = l.values.length ? l.values[l.values.length - 1] : 0;
      const sw = el("span", { class: "swatch" });
      sw.style.background = colors[l.label] || palette[i % palette.length];
      return el("span", { class: "key" }, sw, l.label + " ", el("b", {}, num(last) + (c.unit || "")));
    }));
    return el("figure", { class: "chart-box" }, el("figcaption", {}, c.title + (c.unit ? " (" + c.unit + ")" : "")), g, legend);
  }
  function charts(s) {
    const every = s.everyMs || 1000;
    const points = Math.max(2, s.atMs.length + 1, s.points || 0);
    document.getElementById("charts-window").textContent = "last " + span(every * (points - 1)) + ", one sample every " + span(every);
    document.getElementById("charts").replaceChildren(...s.charts.map((c) => chart(c, s.atMs, every, points)));
  }

  // The graph: this node in the middle, every other node it knows around
  // it; an edge per linked peer (width by links, dashed when not linked),
  // labelled with its links, pending calls and pool traffic.
  let lastPeers = null; // {at, messages by node}: pool traffic rates between polls
  function graph(s) {
    const W = 640, H = 260, cx = W / 2, cy = H / 2;
    const self = s.node.name;
    const peers = new Map(s.peers.peers.map((p) => [p.node, p]));
    const nodes = new Map(); // name -> {state, inc, draining}
    for (const i of s.members.incarnations) {
      if (i.node === self) continue;
      const n = nodes.get(i.node) || { state: "down", inc: i.incarnation };
      if (i.state === "up") Object.assign(n, { state: "up", inc: i.incarnation, draining: i.draining });
      nodes.set(i.node, n);
    }
    for (const p of s.peers.peers) {
      const n = nodes.get(p.node) || {};
      nodes.set(p.node, Object.assign(n, { state: "up", inc: p.incarnation || n.inc, draining: p.draining }));
    }
    const now = Date.parse(s.at);
    const rates = {};
    for (const p of s.peers.peers) {
      if (!p.pool) continue;
      const prev = lastPeers ? lastPeers.messages[p.node] : undefined;
      if (prev !== undefined && now > lastPeers.at && p.pool.messages >= prev) rates[p.node] = (p.pool.messages - prev) * 1000 / (now - lastPeers.at);
    }
    if (!lastPeers || now > lastPeers.at) lastPeers = { at: now, messages: Object.fromEntries(s.peers.peers.filter((p) => p.pool).map((p) => [p.node, p.pool.messages])) };

    const names = [...nodes.keys()].sort();
    const g = svg("svg", { class: "graph", viewBox: "0 0 " + W + " " + H, "data-nodes": names.length + 1, role: "img" });
    g.append(svg("title", {}, "the nodes " + self + " knows and its links to them"));
    const small = names.length > 16;
    const rx = W / 2 - 80, ry = H / 2 - 46; // room for the labels under the nodes
    // Around an ellipse, starting on the right, so that two peers sit
    // left and right of this node, three in a triangle, and so on.
    const first = names.length === 1 ? 0 : -Math.PI / 2 + Math.PI / names.length;
    const place = names.map((n, i) => {
      const a = first + 2 * Math.PI * i / Math.max(1, names.length);
      return { name: n, x: cx + rx * Math.cos(a), y: cy + ry * Math.sin(a) };
    });
    for (const p of place) {
      const peer = peers.get(p.name), n = nodes.get(p.name);
      const links = peer ? peer.links.native + peer.links.pool : 0;
      const state = peer && peer.linked ? "linked" : n.state === "up" ? "known" : "down";
      const edge = svg("line", {
        class: "edge " + state, x1: cx, y1: cy, x2: p.x, y2: p.y,
        "stroke-width": 1.5 + 1.5 * Math.log2(1 + links),
        "data-peer": p.name, "data-state": state,
        "data-native": peer ? peer.links.native : 0, "data-pool": peer ? peer.links.pool : 0,
        "data-pending": peer ? peer.pending : 0,
      });
      edge.append(svg("title", {}, self + " → " + p.name + ": " + state));
      g.append(edge);
      if (!small && peer && peer.linked) {
        const parts = [peer.links.native + " native" + (peer.links.fenced ? " (" + peer.links.fenced + " fenced)" : ""), peer.links.pool + " pool"];
        if (peer.pending) parts.push(peer.pending + " pending");
        if (rates[p.name] !== undefined) parts.push(num(rates[p.name]) + " msg/s");
        // At the middle: beside a vertical edge, above any other.
        const mx = (cx + p.x) / 2, my = (cy + p.y) / 2;
        const upright = Math.abs(p.x - cx) < 40;
        g.append(svg("text", {
          class: "edge-label", x: upright ? mx + 8 : mx, y: upright ? my + 3 : my - 7, "text-anchor": upright ? "start" : "middle",
        }, parts.join(" · ")));
      }
    }
    const node = (name, x, y, cls, sub, attrs) => {
      const grp = svg("g", Object.assign({ class: "gnode " + cls, "data-node": name }, attrs));
      grp.append(svg("circle", { cx: x, cy: y, r: small ? 9 : 22 }));
      grp.append(svg("title", {}, name + (sub ? " " + sub : "")));
      if (!small || cls.includes("self")) {
        grp.append(svg("text", { class: "gname", x: x, y: y + 4, "text-anchor": "middle" }, name));
        if (sub) grp.append(svg("text", { class: "ginc", x: x, y: y + 34, "text-anchor": "middle" }, sub));
      }
      g.append(grp);
    };
    node(self, cx, cy, "self up", "", { "data-state": "up" }); // its incarnation is in the header
    for (const p of place) {
      const n = nodes.get(p.name), peer = peers.get(p.name);
      const state = n.state === "up" ? "up" : "down";
      node(p.name, p.x, p.y, state + (n.draining ? " draining" : "") + (peer && peer.linked ? "" : " unlinked"), (n.inc || "") + (n.draining ? ", draining" : ""), { "data-state": state });
    }
    const legend = el("div", { class: "legend" },
      el("span", { class: "key" }, el("span", { class: "swatch linked" }), "linked"),
      el("span", { class: "key" }, el("span", { class: "swatch known" }), "up, not linked"),
      el("span", { class: "key" }, el("span", { class: "swatch down" }), "down"),
      el("span", { class: "muted" }, " edge width: links; label: native · pool links, pending calls, pool messages/s"));
    if (!names.length) legend.prepend(el("span", { class: "muted" }, "no other node known yet. "));
    document.getElementById("graph").replaceChildren(g, legend);
  }

  function members(m) {
    fill("members", m.incarnations.map((i) => el("tr", {
      class: "member" + (i.self ? " self" : ""), "data-node": i.node, "data-incarnation": i.incarnation, "data-state": i.state,
    },
      el("td", {}, i.node + (i.self ? " (this node)" : "")),
      el("td", {}, i.incarnation),
      el("td", {}, i.addr || ""),
      el("td", { class: i.state }, i.state + (i.draining ? ", draining" : "")),
      el("td", {}, [i.discovered ? "discovery" : "", i.linked ? "link" : ""].filter(Boolean).join(" + ")),
      el("td", {}, time(i.firstSeen)),
      el("td", { class: "changes" }, i.changes.map((c) => c.what + " " + time(c.at)).join(" · ")),
    )));
    document.getElementById("events").replaceChildren(...m.events.map((e) =>
      el("li", {}, time(e.at) + " " + e.node + "/" + e.incarnation + " " + e.what)));
  }

  function treeItem(n) {
    const li = el("li", { class: n.supervisor ? "sup" : "child", "data-id": n.id || "", "data-restarts": n.restarts });
    const label = el("span", { class: "label" });
    if (n.id) label.append(n.id + " ");
    if (n.supervisor) {
      label.append("supervisor " + n.pid + (n.name ? " \"" + n.name + "\"" : ""));
      if (n.err) li.append(label, " ", el("span", { class: "err" }, n.err));
      else li.append(label, el("span", { class: "muted" }, " " + n.strategy + ", " + (n.recentRestarts || 0) + "/" + n.intensity + " restarts in " + n.period));
    } else {
      label.append(n.running ? n.pid : "not running");
      if (n.name) label.append(" \"" + n.name + "\"");
      li.append(label, el("span", { class: "muted" }, " (" + n.restart + ")"));
    }
    if (n.id) li.append(" ", el("span", { class: n.restarts ? "restarts" : "muted" }, n.restarts + " restarts"));
    if (n.children && n.children.length) li.append(el("ul", { class: "tree" }, ...n.children.map(treeItem)));
    if (n.childrenLeft) li.append(el("div", { class: "muted" }, n.childrenLeft + " more children not listed"));
    return li;
  }
  function trees(t) {
    const kids = [el("ul", { class: "tree root" }, ...t.trees.map(treeItem))];
    if (t.truncated) kids.push(el("div", { class: "muted" }, "cut: too many supervisors and children to list"));
    if (!t.trees.length) kids.push(el("div", { class: "muted" }, "no supervisors"));
    document.getElementById("trees").replaceChildren(...kids);
  }

  function peers(p) {
    fill("peers", p.peers.map((x) => {
      const pool = x.pool;
      return el("tr", {
        class: "peer", "data-node": x.node, "data-linked": x.linked, "data-status": pool ? pool.status : "",
        "data-batches": pool ? pool.batches : 0,
      },
        el("td", {}, x.node + (x.incarnation ? "/" + x.incarnation : "")),
        el("td", { class: x.linked ? "up" : "down" }, x.linked ? "linked" : "not linked"),
        el("td", { class: "links" }, x.linked ? x.links.native + " native" + (x.links.fenced ? " (" + x.links.fenced + " fenced)" : "") + " · " + x.links.pool + " pool" : ""),
        el("td", {}, pool ? pool.status + " (" + pool.proxies + ")" : "-"),
        el("td", { class: "batches" }, pool ? pool.batches : ""),
        el("td", {}, pool ? pool.meanBatch.toFixed(1) : ""),
        el("td", {}, pool ? hist(pool.hist, "small") : ""),
        el("td", {}, pool ? pool.queueDepth + " / " + pool.queueBytes + " B" : ""),
        el("td", {}, pool ? pool.deadLetters : ""),
      );
    }));
  }

  function actorRows(list) {
    return list.map((a) => el("tr", { class: "actor" },
      el("td", {}, a.name || "#" + a.id), el("td", {}, a.type), el("td", {}, a.depth), el("td", {}, a.rate.toFixed(1))));
  }
  function actors(a) {
    document.getElementById("actors-summary").textContent =
      a.count + " actors, " + a.queued + " messages queued (sample every " + a.interval + ")";
    const h = hist(a.hist);
    h.id = "mailbox-hist";
    document.getElementById("mailbox-hist").replaceWith(h);
    fill("deepest", actorRows(a.deepest));
    fill("busiest", actorRows(a.busiest));
  }

  function pending(p) {
    fill("pending", p.pending.map((x) => el("tr", { class: "pending", "data-node": x.node },
      el("td", {}, x.node), el("td", {}, x.incarnation), el("td", {}, x.count),
      el("td", {}, x.count ? x.oldestMs.toFixed(1) + " ms" : ""))));
  }

  // Counters: a table with labels, in three columns; the rate is the
  // change since the previous poll.
  let lastCounters = null; // {at, values by key} of the last snapshot drawn
  let counterRates = {}; // by key, since the snapshot before it
  const hideZeros = document.getElementById("hide-zeros");
  function labelText(l) {
    return Object.entries(l || {}).map(([k, v]) => k + "=" + v).join(", ");
  }
  const counterKey = (r) => r.layer + "/" + r.name + "{" + labelText(r.labels) + "}";
  function countRates(c, at) {
    const now = Date.parse(at), prev = lastCounters;
    if (prev && now <= prev.at) return;
    const values = Object.fromEntries(c.table.map((r) => [counterKey(r), r.value]));
    counterRates = {};
    if (prev) {
      for (const [k, v] of Object.entries(values)) {
        const old = prev.values[k];
        if (old !== undefined && v > old) counterRates[k] = (v - old) * 1000 / (now - prev.at);
      }
    }
    lastCounters = { at: now, values };
  }
  function counters(c) {
    const rows = c.table.filter((r) => !hideZeros.checked || r.value !== 0).map((r) => {
      const k = counterKey(r);
      const rate = counterRates[k] !== undefined ? num(counterRates[k]) + "/s" : "";
      return el("tr", { class: "counter", "data-layer": r.layer, "data-name": r.name, "data-labels": labelText(r.labels), "data-value": r.value },
        el("td", { class: "muted" }, r.layer), el("td", {}, r.name), el("td", { class: "labels" }, labelText(r.labels)),
        el("td", { class: "num" }, num(r.value)), el("td", { class: "num rate" }, rate));
    });
    const cols = 3, per = Math.ceil(rows.length / cols);
    const tables = [];
    for (let i = 0; i < cols && i * per < rows.length; i++) {
      tables.push(el("table", { class: "counters" },
        el("thead", {}, el("tr", {}, ...["layer", "counter", "labels", "value", "rate"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows.slice(i * per, (i + 1) * per))));
    }
    document.getElementById("counters").replaceChildren(...tables);
  }

  // Extra panels (observer.Panel): each a section of generic tables.
  function panels(list, left) {
    const out = (list || []).map((p) => {
      const sec = el("section", { class: "extra", "data-panel": p.name },
        el("h2", {}, p.name, " ", el("a", { class: "json", href: withToken("api/panels/" + encodeURIComponent(p.name)) }, "json")));
      if (p.err) sec.append(el("div", { class: "err" }, p.err));
      for (const t of p.tables) {
        if (t.title) sec.append(el("h3", {}, t.title));
        const head = el("tr", {}, ...t.columns.map((c) => el("th", {}, c)));
        const rows = t.rows.map((r) => el("tr", { class: "row" }, ...r.map((c) => el("td", {}, c))));
        sec.append(el("table", { class: "generic" }, el("thead", {}, head), el("tbody", {}, ...rows)));
        if (t.left) sec.append(el("div", { class: "muted" }, t.left + " more rows not listed"));
        if (!t.rows.length) sec.append(el("div", { class: "muted" }, "none"));
      }
      return sec;
    });
    if (left) out.push(el("section", { class: "muted" }, left + " more panels not shown"));
    document.getElementById("panels").replaceChildren(...out);
  }

  // draw draws every panel; one that fails leaves the others drawn and
  // says so in the status line.
  let last = null;
  function draw(s) {
    last = s;
    document.getElementById("node-name").textContent = s.node.name;
    document.getElementById("node-meta").textContent = "incarnation " + s.node.incarnation + " at " + s.node.addr;
    const failed = [];
    for (const [name, f] of [
      ["charts", () => charts(s.series)], ["graph", () => graph(s)], ["members", () => members(s.members)],
      ["trees", () => trees(s.trees)], ["peers", () => peers(s.peers)], ["actors", () => actors(s.actors)],
      ["pending", () => pending(s.pending)], ["counters", () => { countRates(s.counters, s.at); counters(s.counters); }],
      ["panels", () => panels(s.panels, s.panelsLeft)],
    ]) {
      try { f(); } catch (e) { failed.push(name + ": " + e.message); }
    }
    const st = document.getElementById("status");
    st.className = failed.length ? "status error" : "status";
    st.textContent = failed.length ? "drawing failed: " + failed.join("; ") : "updated " + time(s.at) + " (took " + s.took + ")";
  }
  hideZeros.addEventListener("change", () => { if (last) counters(last.counters); });

  const initial = JSON.parse(document.getElementById("initial").textContent);
  draw(initial);
  const every = initial.node.refreshMs || 1000;
  async function poll() {
    try {
      const r = await fetch("api/snapshot", { headers: token ? { "X-Observer-Token": token } : {}, cache: "no-store" });
      if (!r.ok) throw new Error(r.status + " " + (await r.text()));
      draw(await r.json());
    } catch (e) {
      const st = document.getElementById("status");
      st.className = "status error";
      st.textContent = "update failed: " + e.message;
    }
    setTimeout(poll, every);
  }
  setTimeout(poll, every);
})();
