/* Head atlas script: part of the compendium (MIT licence). No dependencies, nothing fetched.
   Reads the JSON in #atlas-data (written by analysis_utils/atlas.py):
   model {name, num_layers, num_heads}, families [{id, title, notebook, sources, measured,
   properties [{id, label, kind, order, roles, note, values, control, rank}]}], claims, examples.
   values / control / rank: [layer][head] 0-based, null = not measured. */
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("atlas-data").textContent);
  const L = D.model.num_layers, H = D.model.num_heads;
  const PROPS = new Map();
  D.families.forEach(f => f.properties.forEach(p => PROPS.set(p.id, { p: p, f: f })));
  // matplotlib's viridis at 9 evenly spaced stops (CC0, from matplotlib's _cm_listed.py).
  const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
                   "#5ec962", "#addc30", "#fde725"];
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                   "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  const NM = "not measured";
  const $ = id => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const label = (l, h) => (l + 1) + "-" + (h + 1);
  let current = null, selected = null, hits = new Set();

  function fmt(v) {
    if (v === null || v === undefined) return NM;
    if (typeof v === "string") return v;
    const a = Math.abs(v);
    if (a === 0) return "0";
    if (a >= 100) return v.toFixed(1);
    if (a >= 1) return v.toFixed(2);
    if (a >= 0.001) return v.toFixed(3);
    return v.toExponential(1);
  }
  function hexToRgb(h) { return [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16)); }
  function viridis(t) {
    t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
    const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), u = t - i;
    const a = hexToRgb(VIRIDIS[i]), b = hexToRgb(VIRIDIS[i + 1]);
    return a.map((x, k) => Math.round(x + (b[k] - x) * u));
  }
  const css = rgb => "rgb(" + rgb.join(",") + ")";
  const ink = rgb => (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 150 ? "#111" : "#fff");

  function range(p) {
    let lo = Infinity, hi = -Infinity;
    p.values.forEach(r => r.forEach(v => { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }));
    return [lo, hi];
  }
  function categories(p) { return p.categories || []; }

  function buildSelect() {
    const sel = $("property");
    D.families.forEach(f => {
      const g = el("optgroup", { label: f.title + " (notebook " + f.notebook + ")" });
      if (!f.measured) {
        g.appendChild(el("option", { value: "", disabled: "" }, NM + " for this model"));
      }
      f.properties.forEach(p => g.appendChild(el("option", { value: p.id }, p.label)));
      sel.appendChild(g);
    });
    sel.addEventListener("change", () => { hits = new Set(); setProperty(sel.value); });
  }

  function buildGrid() {
    const g = $("grid");
    g.style.gridTemplateColumns = "54px repeat(" + H + ", minmax(0, 1fr))";
    g.appendChild(el("div", { class: "axis" }, "layer \\ head"));
    for (let h = 0; h < H; h++) g.appendChild(el("div", { class: "axis" }, String(h + 1)));
    for (let l = 0; l < L; l++) {
      g.appendChild(el("div", { class: "axis" }, String(l + 1)));
      for (let h = 0; h < H; h++) {
        const c = el("div", { class: "cell", "data-head": label(l, h), role: "gridcell",
                             tabindex: "0" });
        c.addEventListener("click", () => select(l, h));
        c.addEventListener("keydown", e => { if (e.key === "Enter") select(l, h); });
        g.appendChild(c);
      }
    }
  }

  function setProperty(id) {
    current = PROPS.get(id);
    $("property").value = id;
    const p = current.p;
    const cells = document.querySelectorAll("#grid .cell");
    const leg = $("legend");
    leg.textContent = "";
    let colourOf;
    if (p.kind === "category") {
      const cats = categories(p);
      colourOf = v => hexToRgb(PALETTE[cats.indexOf(v) % PALETTE.length]);
      cats.forEach(c => {
        const s = el("span");
        const sw = el("span", { class: "swatch" });
        sw.style.background = css(colourOf(c));
        s.appendChild(sw);
        s.appendChild(document.createTextNode(c));
        leg.appendChild(s);
      });
    } else {
      const [lo, hi] = range(p);
      colourOf = v => viridis(hi > lo ? (v - lo) / (hi - lo) : 0.5);
      leg.appendChild(el("span", {}, fmt(lo)));
      const bar = el("span", { class: "bar" });
      bar.style.background = "linear-gradient(to right," + VIRIDIS.join(",") + ")";
      leg.appendChild(bar);
      leg.appendChild(el("span", {}, fmt(hi)));
      leg.appendChild(el("span", {}, "(" + p.label + "; rank 1 = " +
        (p.order === "asc" ? "lowest" : "highest") + ")"));
    }
    const nm = el("span");
    const sw = el("span", { class: "swatch" });
    sw.style.background = "repeating-linear-gradient(45deg,#eee,#eee 3px,#fff 3px,#fff 6px)";
    nm.appendChild(sw);
    nm.appendChild(document.createTextNode(NM));
    leg.appendChild(nm);
    cells.forEach(c => {
      const [l, h] = c.dataset.head.split("-").map(x => parseInt(x, 10) - 1);
      const v = p.values[l][h];
      c.classList.toggle("hit", hits.has(c.dataset.head));
      if (v === null) {
        c.className = "cell unmeasured" + (hits.has(c.dataset.head) ? " hit" : "");
        c.style.background = "";
        c.style.color = "";
        c.textContent = "–";
        c.title = "head " + c.dataset.head + ": " + NM;
      } else {
        c.classList.remove("unmeasured");
        const rgb = colourOf(v);
        c.style.background = css(rgb);
        c.style.color = ink(rgb);
        c.textContent = p.kind === "category" ? String(v).slice(0, 5) : fmt(v);
        c.title = "head " + c.dataset.head + ": " + p.label + " = " + fmt(v) +
          (p.rank ? " (rank " + p.rank[l][h] + " of " + p.n_measured + ")" : "");
      }
      c.classList.toggle("selected", selected !== null && c.dataset.head === label(selected[0], selected[1]));
    });
    if (selected) renderDetail();
  }

  function select(l, h) {
    selected = [l, h];
    document.querySelectorAll("#grid .cell").forEach(c =>
      c.classList.toggle("selected", c.dataset.head === label(l, h)));
    renderDetail();
  }

  function valueCell(v, prop, kind) {
    const td = el("td", { class: "value", "data-prop": prop, "data-kind": kind });
    if (v === null || v === undefined) { td.classList.add("nm"); td.textContent = NM; }
    else { td.setAttribute("data-value", String(v)); td.textContent = fmt(v); }
    return td;
  }

  function renderDetail() {
    const [l, h] = selected, name = label(l, h);
    const box = $("detail");
    box.textContent = "";
    box.setAttribute("data-selected", name);
    box.appendChild(el("h2", {}, "Head " + name + " (layer " + (l + 1) + ", head " + (h + 1) + ")"));
    const beh = PROPS.get("05.behaviour");
    if (beh) {
      box.appendChild(el("p", { class: "summary" }, "Behaviour label: " +
        fmt(beh.p.values[l][h]) + "; random-weights control: " +
        (beh.p.control ? fmt(beh.p.control[l][h]) : "–")));
    }
    if (current && current.p.kind === "number") {
      const p = current.p, v = p.values[l][h];
      box.appendChild(el("p", { class: "summary" }, p.label + ": " + fmt(v) +
        (v === null ? "" : " (rank " + p.rank[l][h] + " of " + p.n_measured + ")")));
    }
    renderMaps(box, l, h);
    renderNeighbours(box, name);
    renderClaims(box, name);
    box.appendChild(el("h3", {}, "Everything measured on head " + name));
    box.appendChild(el("p", { class: "note" }, "Each value beside the same measure on the " +
      "random-weights control (where the compendium has one) and the head's rank among all " +
      L * H + " heads."));
    D.families.forEach(f => {
      const d = el("details", { "data-family": f.id });
      if (current && current.f.id === f.id) d.open = true;
      const s = el("summary", {}, f.title + " ");
      s.appendChild(el("span", { class: "count" }, f.measured ?
        "(" + f.properties.length + ", notebook " + f.notebook + ")" : "(" + NM + ")"));
      d.appendChild(s);
      if (!f.measured) {
        d.appendChild(el("p", { class: "nm" }, NM + " for this model: no " + f.sources[0] +
          " in this run (notebook " + f.notebook + ")."));
        box.appendChild(d);
        return;
      }
      const t = el("table", { class: "values" });
      const hr = el("tr");
      ["property", "this model", "control", "rank"].forEach(x => hr.appendChild(el("th", {}, x)));
      t.appendChild(hr);
      f.properties.forEach(p => {
        const tr = el("tr", { "data-prop": p.id });
        if (current && current.p.id === p.id) tr.classList.add("current");
        const tdName = el("td", {}, p.label);
        if (p.note) tdName.title = p.note;
        tdName.style.cursor = "pointer";
        tdName.addEventListener("click", () => { hits = new Set(); setProperty(p.id); });
        tr.appendChild(tdName);
        tr.appendChild(valueCell(p.values[l][h], p.id, "model"));
        if (p.control) tr.appendChild(valueCell(p.control[l][h], p.id, "control"));
        else tr.appendChild(el("td", { title: "no random-weights control for this measure" }, "–"));
        const r = p.rank ? p.rank[l][h] : null;
        tr.appendChild(el("td", { class: "rank" }, p.rank ? (r === null ? "–" : r + " / " + p.n_measured) : ""));
        t.appendChild(tr);
      });
      d.appendChild(t);
      d.appendChild(el("p", { class: "note" }, "From " + f.sources.join(", ") +
        (f.properties.some(p => p.control) ? "; control: " + f.control_note : "") + "."));
      box.appendChild(d);
    });
  }

  function renderNeighbours(box, name) {
    const nb = D.neighbours || {};
    box.appendChild(el("h3", {}, "Closest heads (Clark Section 6)"));
    if (!nb.model) {
      box.appendChild(el("p", { class: "nm" }, NM + " for this model: no 05_js_distance_model.csv " +
        "in this run (notebook 05)."));
      return;
    }
    const p = el("p", { class: "neighbours" });
    [["model", "this model"], ["control", "random-weights control"]].forEach(([kind, what]) => {
      if (!nb[kind]) return;
      const line = el("span", { "data-kind": kind });
      line.appendChild(document.createTextNode(what + ": "));
      nb[kind][name].forEach(([other, d], i) => {
        if (i) line.appendChild(document.createTextNode(", "));
        const a = el("a", { href: "#", "data-goto": other }, other);
        a.addEventListener("click", e => {
          e.preventDefault();
          const [ol, oh] = other.split("-").map(x => parseInt(x, 10) - 1);
          select(ol, oh);
        });
        line.appendChild(a);
        line.appendChild(document.createTextNode(" (" + fmt(d) + ")"));
      });
      p.appendChild(line);
      p.appendChild(el("br"));
    });
    box.appendChild(p);
    box.appendChild(el("p", { class: "note" }, "Jensen-Shannon distance between the heads' " +
      "attention maps on the same segments, from 05_js_distance_model.csv (and _control)."));
  }

  function renderClaims(box, name) {
    const c = D.claims;
    box.appendChild(el("h3", {}, "Verdicts naming head " + name));
    if (c.note) box.appendChild(el("p", { class: "note" }, c.note));
    const rows = c.rows.filter(r => r.heads.indexOf(name) >= 0);
    if (!c.source) return;
    if (!rows.length) {
      box.appendChild(el("p", { class: "note", id: "no-claims" }, "No claim in " + c.source +
        " names this head."));
      return;
    }
    const withControl = rows.some(r => r.control_verdict);
    const t = el("table", { class: "values claims" });
    const hr = el("tr");
    ["claim", "this run", "verdict"].concat(withControl ? ["control's verdict"] : [])
      .forEach(x => hr.appendChild(el("th", {}, x)));
    t.appendChild(hr);
    // the model's verdict in colour; the control's plain (its "no" is what a claim wants)
    const verdictCell = (v, plain) => {
      v = String(v || "–");
      return el("td", { class: plain ? "" : /^(yes|held)/i.test(v) ? "verdict-yes" :
                                      /^(no|not)/i.test(v) ? "verdict-no" : "" }, v);
    };
    rows.forEach(r => {
      const tr = el("tr");
      const c = el("td", {}, r.claim + " (" + [r.paper, r.notebook && "notebook " + r.notebook]
        .filter(Boolean).join(", ") + ")");
      if (r.criterion) c.title = "criterion: " + r.criterion;
      tr.appendChild(c);
      tr.appendChild(el("td", {}, r.this_run));
      tr.appendChild(verdictCell(r.verdict));
      if (withControl) tr.appendChild(verdictCell(r.control_verdict, true));
      t.appendChild(tr);
    });
    box.appendChild(t);
    box.appendChild(el("p", { class: "note" }, "From " + c.source + "."));
  }

  const decoded = [];
  function mapsOf(k) {
    if (!decoded[k]) {
      const s = atob(D.examples.sentences[k].maps), a = new Uint8Array(s.length);
      for (let i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
      decoded[k] = a;
    }
    return decoded[k];
  }

  function renderMaps(box, l, h) {
    box.appendChild(el("h3", {}, "Example attention maps"));
    const ex = D.examples;
    if (ex.unavailable) { box.appendChild(el("p", { class: "note", id: "maps-unavailable" }, ex.unavailable)); return; }
    if (ex.warning) box.appendChild(el("p", { class: "note" }, ex.warning));
    const wrap = el("div", { class: "maps" });
    ex.sentences.forEach((s, k) => {
      const n = s.tokens.length, cell = Math.max(7, Math.min(12, Math.floor(170 / n)));
      const pad = 58, size = pad + n * cell;
      const cv = el("canvas", { width: size, height: size, "aria-label": "attention of head " +
        label(l, h) + " on: " + s.text });
      const g = cv.getContext("2d");
      const a = mapsOf(k), off = (l * H + h) * n * n;
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
        const t = a[off + i * n + j] / 255;
        g.fillStyle = "rgb(" + Math.round(255 - 247 * t) + "," + Math.round(255 - 207 * t) + "," +
          Math.round(255 - 148 * t) + ")";
        g.fillRect(pad + j * cell, pad + i * cell, cell, cell);
      }
      g.fillStyle = "#333";
      g.font = Math.min(10, cell + 1) + "px sans-serif";
      g.textAlign = "right";
      g.textBaseline = "middle";
      s.tokens.forEach((tk, i) => g.fillText(tk.slice(0, 9), pad - 3, pad + (i + 0.5) * cell));
      s.tokens.forEach((tk, j) => {
        g.save();
        g.translate(pad + (j + 0.5) * cell, pad - 3);
        g.rotate(-Math.PI / 2);
        g.textAlign = "left";
        g.fillText(tk.slice(0, 9), 0, 0);
        g.restore();
      });
      g.strokeStyle = "#999";
      g.strokeRect(pad, pad, n * cell, n * cell);
      const fig = el("figure");
      fig.appendChild(cv);
      fig.appendChild(el("figcaption", {}, "“" + s.text + "” rows attend to columns; white 0, dark blue 1."));
      wrap.appendChild(fig);
    });
    box.appendChild(wrap);
  }

  function search(q) {
    const out = $("search-result");
    out.textContent = "";
    q = q.trim();
    if (!q) return;
    const m = q.match(/^(?:l(?:ayer)?\s*)?(\d+)\s*[-–:,.\s]\s*(?:h(?:ead)?\s*)?(\d+)$/i);
    if (m) {
      const l = parseInt(m[1], 10) - 1, h = parseInt(m[2], 10) - 1;
      if (l < 0 || h < 0 || l >= L || h >= H) {
        out.textContent = "No head " + m[1] + "-" + m[2] + " in this " + L + " x " + H +
          " model (heads run from 1-1 to " + L + "-" + H + ").";
        return;
      }
      hits = new Set([label(l, h)]);
      setProperty(current.p.id);
      select(l, h);
      out.textContent = "Head " + label(l, h) + " selected.";
      return;
    }
    const s = q.toLowerCase(), exact = [], cats = [], partial = [];
    PROPS.forEach(({ p }) => {
      if (p.kind === "category" && categories(p).some(c => c.toLowerCase() === s)) cats.push(p);
      else if (p.roles.some(r => r === s)) exact.push(p);
      else if (p.label.toLowerCase().indexOf(s) >= 0) partial.push(p);
    });
    // the best match first, then categorical labels (a behaviour), then the rest
    const found = exact.slice(0, 1).concat(cats, exact.slice(1), partial);
    if (!found.length) {
      const notMeasured = D.families.filter(f => !f.measured && f.title.toLowerCase().indexOf(s) >= 0);
      out.textContent = notMeasured.length ? "“" + q + "”: " + notMeasured[0].title + " is " + NM +
        " for this model." : "No head or measured role matches “" + q + "”. Try a head (3-9), " +
        "a relation (nsubj, obj), coreference, vertical, previous, entropy.";
      return;
    }
    const p = found[0];
    const heads = [];
    if (p.kind === "category") {
      const cat = categories(p).find(c => c.toLowerCase() === s);
      for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) if (p.values[l][h] === cat) heads.push([l, h]);
    } else {
      for (let l = 0; l < L; l++) for (let h = 0; h < H; h++)
        if (p.rank[l][h] !== null && p.rank[l][h] <= 3) heads.push([l, h]);
      heads.sort((a, b) => p.rank[a[0]][a[1]] - p.rank[b[0]][b[1]]);
    }
    hits = new Set(heads.map(x => label(x[0], x[1])));
    setProperty(p.id);
    if (heads.length) select(heads[0][0], heads[0][1]);
    out.appendChild(document.createTextNode("“" + q + "”: " + found.length + " matching " +
      (found.length === 1 ? "property" : "properties") + "; coloured by " + p.label + "; outlined: " +
      (p.kind === "category" ? "heads labelled " + s : "the top 3") + " (" +
      (heads.map(x => label(x[0], x[1])).join(", ") || "none") + "). " + (p.note || "") + " "));
    found.slice(1, 25).forEach(o => {
      const b = el("button", { type: "button", "data-prop": o.id }, o.label);
      b.addEventListener("click", () => { hits = new Set(); setProperty(o.id); });
      out.appendChild(b);
    });
  }

  function init() {
    $("subtitle").textContent = L + " layers × " + H + " heads (" + D.model.source + "), profile " +
      D.profile + ". Every value is read from the committed tables in " + D.results +
      "/, beside its random-weights control where one exists.";
    buildSelect();
    buildGrid();
    const first = [...PROPS.values()].find(x => x.p.kind === "number");
    setProperty(PROPS.has("02.All.dep2head") ? "02.All.dep2head" : first.p.id);
    $("search-form").addEventListener("submit", e => { e.preventDefault(); search($("search").value); });
    const f = $("footer");
    f.textContent = "Generated by `python -m analysis_utils atlas --profile " + D.profile +
      "` from the tables in " + D.results + "/ (each notebook's run is recorded in its " +
      "NN_provenance.json there); claims from " + (D.claims.source || "no ledger") + ". Provenance in the _provenance.json " +
      "beside this page. Attention is not explanation: these are measurements of where heads " +
      "look, not of what the model uses.";
    select(0, 0);
  }
  init();
})();
