// The observer page: draws a snapshot, then polls api/snapshot.
// Everything is written with textContent: nothing from the server is
// parsed as HTML.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token");
  if (token) {
    for (const a of document.querySelectorAll("a.json")) a.href += "?token=" + encodeURIComponent(token);
  }

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
  function fill(id, rows) {
    const body = document.querySelector("#" + id + " tbody");
    body.replaceChildren(...rows);
  }
  function time(t) { return t ? new Date(t).toLocaleTimeString() : ""; }
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
    const box = document.getElementById("trees");
    const kids = [el("ul", { class: "tree root" }, ...t.trees.map(treeItem))];
    if (t.truncated) kids.push(el("div", { class: "muted" }, "cut: too many supervisors and children to list"));
    if (!t.trees.length) kids.push(el("div", { class: "muted" }, "no supervisors"));
    box.replaceChildren(...kids);
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
        el("td", {}, pool ? pool.status : "-"),
        el("td", {}, pool ? pool.proxies : ""),
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

  function counters(c) {
    const kv = Object.assign({
      "Failed: not executed": c.failed.notExecuted,
      "Failed: may have executed": c.failed.mayHaveExecuted,
      "Failed: executed (rejected)": c.failed.executed,
    }, c.remote, {
      DeadLetters: c.deadLetters, LateRepliesActor: c.lateReplies, CastFailures: c.castFailures,
    });
    const out = [];
    for (const [k, v] of Object.entries(kv)) out.push(el("dt", {}, k), el("dd", { "data-counter": k }, v));
    document.getElementById("counters").replaceChildren(...out);
  }

  // Extra panels (observer.Panel): each a section of generic tables.
  function panels(list, left) {
    const out = (list || []).map((p) => {
      const sec = el("section", { class: "extra", "data-panel": p.name },
        el("h2", {}, p.name, " ", el("a", { class: "json", href: "api/panels/" + encodeURIComponent(p.name) + (token ? "?token=" + encodeURIComponent(token) : "") }, "json")));
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

  function draw(s) {
    document.getElementById("node-name").textContent = s.node.name;
    document.getElementById("node-meta").textContent = "incarnation " + s.node.incarnation + " at " + s.node.addr;
    members(s.members);
    trees(s.trees);
    peers(s.peers);
    actors(s.actors);
    pending(s.pending);
    counters(s.counters);
    panels(s.panels, s.panelsLeft);
    const st = document.getElementById("status");
    st.className = "status";
    st.textContent = "updated " + time(s.at) + " (took " + s.took + ")";
  }

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
