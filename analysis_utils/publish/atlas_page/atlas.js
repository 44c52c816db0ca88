/* Head atlas script: part of the compendium (MIT licence). No dependencies, nothing fetched.
   Reads the JSON in #atlas-data (written by analysis_utils/atlas.py):
   model {name, num_layers, num_heads}, families [{id, title, notebook, sources, measured,
   properties [{id, label, kind, order, roles, note, values, control, rank, n_measured,
   seeds?, spread?, baseline?}]}], neighbours, claims, examples, sentences, others.
   values / control / rank: [layer][head] 0-based, null = not measured.
   Address: #L-H&p=<property id> (1-based head label), kept up to date with the selection. */
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("atlas-data").textContent);
  const L = D.model.num_layers, H = D.model.num_heads;
  const PROPS = new Map();
  D.families.forEach(f => f.properties.forEach(p => PROPS.set(p.id, { p: p, f: f })));
  // matplotlib's viridis at 9 evenly spaced stops (CC0, from matplotlib's _cm_listed.py).
  const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80",
                   "#5ec962", "#addc30", "#fde725"];
  // Category colours fixed by label, so a label has one colour on every page (Tableau 10).
  const CATEGORY = {
    "syntax": "#4e79a7", "broad": "#f28e2b", "[CLS]": "#e15759", "[SEP]": "#76b7b2",
    "previous token": "#59a14f", "next token": "#edc948", "coreference": "#b07aa1",
    "punctuation": "#ff9da7", "current token": "#9c755f", "other": "#bab0ac"
  };
  const SPARE = ["#86bcb6", "#d4a6c8", "#8cd17d", "#b6992d", "#499894", "#f1ce63", "#a0cbe8"];
  const NM = "not measured";
  const $ = id => document.getElementById(id);
  const el = (tag, attrs, text) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const label = (l, h) => (l + 1) + "-" + (h + 1);
  const parseLabel = s => {
    const m = /^(\d+)-(\d+)$/.exec(s || "");
    if (!m) return null;
    const l = parseInt(m[1], 10) - 1, h = parseInt(m[2], 10) - 1;
    return l >= 0 && h >= 0 && l < L && h < H ? [l, h] : null;
  };
  let current = null, selected = null, focus = [0, 0], hits = new Set(), shared = false;
  let sortKey = "rank", sortDir = 1;

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
  const pct = v => (100 * v).toFixed(1);
  function hexToRgb(h) { return [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16)); }
  function viridis(t) {
    t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
    const i = Math.min(VIRIDIS.length - 2, Math.floor(t)), u = t - i;
    const a = hexToRgb(VIRIDIS[i]), b = hexToRgb(VIRIDIS[i + 1]);
    return a.map((x, k) => Math.round(x + (b[k] - x) * u));
  }
  const css = rgb => "rgb(" + rgb.join(",") + ")";
  // text colour by WCAG contrast: black or white, whichever contrasts more with the fill
  function luminance(rgb) {
    const c = rgb.map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }
  const ink = rgb => ((luminance(rgb) + 0.05) / 0.05 >= 1.05 / (luminance(rgb) + 0.05) ? "#000" : "#fff");
  function categoryColour(v) {
    if (CATEGORY[v]) return hexToRgb(CATEGORY[v]);
    let s = 0;
    for (let i = 0; i < v.length; i++) s = (s * 31 + v.charCodeAt(i)) >>> 0;
    return hexToRgb(SPARE[s % SPARE.length]);
  }

  function range(p) {
    let lo = Infinity, hi = -Infinity;
    p.values.forEach(r => r.forEach(v => { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }));
    return [lo, hi];
  }
  function otherRange(p) {
    const r = [];
    (D.others || []).forEach(o => { if (o.ranges && o.ranges[p.id]) r.push(o.ranges[p.id]); });
    return r;
  }
  function scale(p) {
    let [lo, hi] = range(p);
    if (shared) otherRange(p).forEach(([a, b]) => { lo = Math.min(lo, a); hi = Math.max(hi, b); });
    return [lo, hi];
  }
  const categories = p => p.categories || [];
  function valueText(p, l, h) {
    const v = p.values[l][h];
    if (v === null) return NM;
    if (p.kind === "category") return String(v);
    return fmt(v) + (p.rank ? ", rank " + p.rank[l][h] : "");
  }

  // --- address -----------------------------------------------------------------------
  function writeHash() {
    if (!selected) return;
    const h = "#" + label(selected[0], selected[1]) + (current ? "&p=" + encodeURIComponent(current.p.id) : "");
    if (location.hash !== h) history.replaceState(null, "", h);
  }
  function readHash() {
    const parts = location.hash.replace(/^#/, "").split("&");
    const out = { head: null, prop: null, badHead: null };
    parts.forEach(x => {
      if (x.startsWith("p=")) { try { out.prop = decodeURIComponent(x.slice(2)); } catch (e) { out.prop = x.slice(2); } }
      else if (parseLabel(x)) out.head = parseLabel(x);
      else if (x) out.badHead = x;
    });
    return out;
  }
  // A link this page cannot follow says so, instead of quietly showing something else.
  function reportHash(h) {
    const msgs = [];
    if (h.badHead) msgs.push("The link names head \u201c" + h.badHead + "\u201d, which this " + L +
      " x " + H + " model does not have (heads are layer-head, 1-based).");
    if (h.prop && !PROPS.has(h.prop)) msgs.push("The link names a property this page does not have (\u201c" +
      h.prop + "\u201d); showing " + current.p.label + ".");
    if (msgs.length) $("search-result").textContent = msgs.join(" ");
  }
  function applyHash() {
    const h = readHash();
    if (h.prop && PROPS.has(h.prop) && (!current || current.p.id !== h.prop)) setProperty(h.prop);
    if (h.head) select(h.head[0], h.head[1], { announce: true });
    reportHash(h);
  }

  // --- controls ------------------------------------------------------------------------
  function buildSelect() {
    const sel = $("property");
    D.families.forEach(f => {
      const g = el("optgroup", { label: f.title + " (notebook " + f.notebook + ")" });
      if (!f.measured) g.appendChild(el("option", { value: "", disabled: "" }, NM + " for this model"));
      f.properties.forEach(p => g.appendChild(el("option", { value: p.id }, p.label)));
      sel.appendChild(g);
    });
    sel.addEventListener("change", () => { hits = new Set(); setProperty(sel.value); });
    $("shared").addEventListener("change", e => { shared = e.target.checked; setProperty(current.p.id); });
    $("top-n").addEventListener("change", renderTop);
  }

  function cellAt(l, h) { return document.querySelector('#grid .cell[data-head="' + label(l, h) + '"]'); }

  function buildGrid() {
    const g = $("grid");
    g.style.setProperty("--heads", H);
    g.setAttribute("aria-rowcount", L + 1);
    g.setAttribute("aria-colcount", H + 1);
    g.setAttribute("aria-describedby", "grid-hint");
    const head = el("div", { role: "row", class: "row", "aria-rowindex": "1" });
    head.appendChild(el("div", { role: "columnheader", class: "axis", "aria-colindex": "1" }, "layer"));
    for (let h = 0; h < H; h++) {
      head.appendChild(el("div", { role: "columnheader", class: "axis", "aria-colindex": h + 2,
                                   "aria-label": "head " + (h + 1) }, String(h + 1)));
    }
    g.appendChild(head);
    for (let l = 0; l < L; l++) {
      const row = el("div", { role: "row", class: "row", "aria-rowindex": l + 2 });
      row.appendChild(el("div", { role: "rowheader", class: "axis", "aria-colindex": "1",
                                  "aria-label": "layer " + (l + 1) }, String(l + 1)));
      for (let h = 0; h < H; h++) {
        const c = el("div", { class: "cell", "data-head": label(l, h), role: "gridcell",
                              tabindex: "-1", "aria-selected": "false", "aria-colindex": h + 2 });
        c.appendChild(el("span", { class: "v", "aria-hidden": "true" }));
        c.addEventListener("click", () => { setFocus(l, h, false); select(l, h, { announce: true }); });
        row.appendChild(c);
      }
      g.appendChild(row);
    }
    g.addEventListener("keydown", onGridKey);
  }

  function setFocus(l, h, move) {
    const old = cellAt(focus[0], focus[1]);
    if (old) old.setAttribute("tabindex", "-1");
    focus = [l, h];
    const c = cellAt(l, h);
    c.setAttribute("tabindex", "0");
    if (move) c.focus();
  }

  function onGridKey(e) {
    let [l, h] = focus;
    switch (e.key) {
      case "ArrowRight": h = Math.min(H - 1, h + 1); break;
      case "ArrowLeft": h = Math.max(0, h - 1); break;
      case "ArrowDown": l = Math.min(L - 1, l + 1); break;
      case "ArrowUp": l = Math.max(0, l - 1); break;
      case "Home": h = 0; if (e.ctrlKey) l = 0; break;
      case "End": h = H - 1; if (e.ctrlKey) l = L - 1; break;
      case "PageUp": l = 0; break;
      case "PageDown": l = L - 1; break;
      case "Enter": case " ": e.preventDefault(); select(l, h, { announce: true }); return;
      default: return;
    }
    e.preventDefault();
    setFocus(l, h, true);
  }

  function setProperty(id) {
    current = PROPS.get(id);
    $("property").value = id;
    const p = current.p;
    const leg = $("legend");
    leg.textContent = "";
    const others = otherRange(p);
    $("shared-wrap").hidden = !(p.kind === "number" && others.length);
    let colourOf;
    if (p.kind === "category") {
      colourOf = v => categoryColour(String(v));
      categories(p).forEach(c => {
        const s = el("span");
        const sw = el("span", { class: "swatch" });
        sw.style.background = css(colourOf(c));
        s.appendChild(sw);
        s.appendChild(document.createTextNode(c));
        leg.appendChild(s);
      });
    } else {
      const [lo, hi] = scale(p);
      colourOf = v => viridis(hi > lo ? (v - lo) / (hi - lo) : 0.5);
      leg.appendChild(el("span", {}, fmt(lo)));
      const bar = el("span", { class: "bar", role: "img", "aria-label": "colour scale from " + fmt(lo) + " to " + fmt(hi) });
      bar.style.background = "linear-gradient(to right," + VIRIDIS.join(",") + ")";
      leg.appendChild(bar);
      leg.appendChild(el("span", {}, fmt(hi)));
      leg.appendChild(el("span", {}, "(" + p.label + "; rank 1 = " +
        (p.order === "asc" ? "lowest" : "highest") + (shared ? "; scale shared with " +
        D.others.map(o => o.name).join(", ") : "") + ")"));
    }
    const nm = el("span");
    const sw = el("span", { class: "swatch" });
    sw.style.background = "repeating-linear-gradient(45deg,#e4e4e4,#e4e4e4 3px,#fff 3px,#fff 6px)";
    nm.appendChild(sw);
    nm.appendChild(document.createTextNode(NM));
    leg.appendChild(nm);
    $("grid").setAttribute("aria-label", "layer by head grid, coloured by " + p.label);
    document.querySelectorAll("#grid .cell").forEach(c => {
      const [l, h] = parseLabel(c.dataset.head);
      const v = p.values[l][h];
      const span = c.firstChild;
      c.classList.toggle("hit", hits.has(c.dataset.head));
      c.setAttribute("aria-label", "head " + c.dataset.head + ", " + valueText(p, l, h));
      if (v === null) {
        c.classList.add("unmeasured");
        c.style.background = "";
        c.style.color = "";
        span.textContent = "–";
        c.title = "head " + c.dataset.head + ": " + NM;
      } else {
        c.classList.remove("unmeasured");
        const rgb = colourOf(v);
        c.style.background = css(rgb);
        c.style.color = ink(rgb);
        span.textContent = p.kind === "category" ? String(v).slice(0, 5) : fmt(v);
        c.title = "head " + c.dataset.head + ": " + p.label + " = " + fmt(v) +
          (p.rank ? " (rank " + p.rank[l][h] + " of " + p.n_measured + ")" : "");
      }
    });
    renderTop();
    if (selected) { renderDetail(); writeHash(); }
  }

  function select(l, h, opts) {
    opts = opts || {};
    selected = [l, h];
    document.querySelectorAll("#grid .cell").forEach(c => {
      const on = c.dataset.head === label(l, h);
      c.classList.toggle("selected", on);
      c.setAttribute("aria-selected", on ? "true" : "false");
    });
    setFocus(l, h, false);
    renderDetail();
    writeHash();
    if (opts.announce) {
      const p = current.p;
      $("announce").textContent = "Head " + label(l, h) + " selected: " + p.label + " " +
        valueText(p, l, h) + (p.rank && p.values[l][h] !== null ? " of " + p.n_measured : "") + ".";
    }
  }

  // --- statistics beside a value -----------------------------------------------------
  function seedSummary(p, l, h) {
    if (!p.seeds) return null;
    const s = p.seeds, n = s.labels.length;
    const parts = [];
    const sd = p.spread ? p.spread[l][h] : null;
    parts.push("mean of " + n + " seed" + (n > 1 ? "s" : "") + (sd !== null && sd !== undefined ? ", sd " + fmt(sd) : ""));
    if (s.holm) {
      const sig = s.holm.filter((g, i) => g[l][h] === 1 && s.values[i][l][h] < 0).length;
      parts.push("Holm-significant drop in " + sig + " of " + n);
    }
    return parts.join("; ");
  }
  function seedDetails(p, l, h) {
    const s = p.seeds;
    const d = el("details", { class: "seeds" });
    d.appendChild(el("summary", {}, "each seed"));
    const ul = el("ul", { class: "seedlist" });
    s.labels.forEach((lab, i) => {
      const v = s.values[i][l][h];
      let t = lab + ": " + fmt(v);
      if (s.lo && s.lo[i][l][h] !== null) t += " [" + fmt(s.lo[i][l][h]) + ", " + fmt(s.hi[i][l][h]) + "]";
      if (s.p && s.p[i][l][h] !== null) t += ", Holm p " + fmt(s.p[i][l][h]);
      if (s.holm) t += s.holm[i][l][h] === 1 ? " (significant)" : " (not significant)";
      ul.appendChild(el("li", { "data-seed": lab }, t));
    });
    d.appendChild(ul);
    return d;
  }
  function extraCell(p, l, h) {
    const td = el("td", { class: "extra" });
    if (p.baseline) {
      const b = p.baseline, v = p.values[l][h];
      td.appendChild(document.createTextNode("best offset " + (b.offset > 0 ? "+" : "") + b.offset +
        ": " + pct(b.accuracy) + "%" + (v !== null ? " (" + (v >= b.accuracy ? "+" : "") +
        pct(v - b.accuracy) + ")" : "") + ", n " + b.n.toLocaleString("en")));
      td.setAttribute("data-baseline", String(b.accuracy));
      td.setAttribute("data-n", String(b.n));
    }
    if (p.seeds) {
      td.appendChild(document.createTextNode(seedSummary(p, l, h)));
      td.appendChild(seedDetails(p, l, h));
    }
    return td;
  }

  function propButton(p, text) {
    const b = el("button", { type: "button", class: "prop", "data-prop": p.id }, text || p.label);
    if (p.note) b.title = p.note;
    b.addEventListener("click", () => { hits = new Set(); setProperty(p.id); });
    return b;
  }
  function valueCell(v, prop, kind) {
    const td = el("td", { class: "value", "data-prop": prop, "data-kind": kind });
    if (v === null || v === undefined) { td.classList.add("nm"); td.textContent = NM; }
    else { td.setAttribute("data-value", String(v)); td.textContent = fmt(v); }
    return td;
  }

  // --- the detail panel ----------------------------------------------------------------
  function renderDetail() {
    const [l, h] = selected, name = label(l, h);
    const box = $("detail");
    box.textContent = "";
    box.setAttribute("data-selected", name);
    box.appendChild(el("h2", {}, "Head " + name + " (layer " + (l + 1) + " of " + L + ", head " + (h + 1) + ")"));
    box.appendChild(el("p", { class: "warn", id: "not-bert" }, "Head numbers are this model's (" +
      D.model.name + ", " + L + " × " + H + "): its head " + name + " is not BERT-base's head " +
      name + " that the papers name. Compare models by relative depth: layer " + (l + 1) +
      " of " + L + " is at " + ((l + 1) / L).toFixed(2) + "."));
    renderCross(box, l, h);
    renderGlance(box, l, h);
    renderSentences(box, name);
    renderClaims(box, name);
    renderMaps(box, l, h);
    renderNeighbours(box, name);
    renderAll(box, l, h, name);
  }

  // The other model's heads that match this one: by relative depth (its best head on the
  // property in the layers that cover this layer's depth) and by role (its best head on the
  // property overall). Both are round trips: the other page links back to this model's best
  // head in the layers covering its depth, and to this model's best head overall, so a
  // layer's best head (or the model's) comes back to itself. A head number is never copied.
  function depthLayers(l, from, to) {
    // 0-based layer l of `from` layers covers relative depth (l/from, (l+1)/from]; the
    // 1-based layers of a `to`-layer model that overlap it
    const first = Math.floor(l * to / from) + 1, last = Math.ceil((l + 1) * to / from);
    return [first, Math.max(first, last)];
  }

  function renderCross(box, l, h) {
    (D.others || []).forEach(o => {
      const pid = current ? current.p.id : null;
      const best = pid && o.best ? o.best[pid] : null;
      const [a, b] = depthLayers(l, L, o.num_layers);
      const layers = a === b ? "layer " + a : "layers " + a + "-" + b;
      const tail = pid ? "&p=" + encodeURIComponent(pid) : "";
      const p = el("p", { class: "cross" });
      p.appendChild(document.createTextNode("On " + o.name + " (" + o.num_layers + " layers), " +
        "the same relative depth is " + layers + ": "));
      let depthHead = null;
      if (best) {
        let top = null;
        for (let k = a; k <= b; k++) {
          const hh = best.layers[k - 1], v = best.values[k - 1];
          if (hh == null) continue;
          if (!top || (best.order === "asc" ? v < top[2] : v > top[2])) top = [k, hh, v];
        }
        if (top) depthHead = top[0] + "-" + top[1];
      }
      if (depthHead) {
        p.appendChild(el("a", { href: o.href + "#" + depthHead + tail, "data-other": o.profile,
                                "data-match": "depth" },
          "its best head there on " + current.p.label + ", " + depthHead));
      } else {
        p.appendChild(el("a", { href: o.href + "#" + a + "-1" + tail, "data-other": o.profile,
                                "data-match": "depth" }, layers + " (head 1; this property is not measured there)"));
      }
      if (best && best.all) {
        p.appendChild(document.createTextNode("; the same role, its best head on " +
          current.p.label + " overall: "));
        p.appendChild(el("a", { href: o.href + "#" + best.all + tail, "data-other": o.profile,
                                "data-match": "role" }, best.all));
      }
      p.appendChild(document.createTextNode("."));
      box.appendChild(p);
    });
  }

  function renderGlance(box, l, h) {
    box.appendChild(el("h3", {}, "At a glance"));
    const beh = PROPS.get("05.behaviour");
    if (beh) {
      box.appendChild(el("p", { class: "summary" }, "Behaviour label (notebook 05): " +
        fmt(beh.p.values[l][h]) + "; random-weights control: " +
        (beh.p.control ? fmt(beh.p.control[l][h]) : "–") + "."));
    }
    if (current && current.p.kind === "number") {
      const p = current.p, v = p.values[l][h];
      const s = el("p", { class: "summary", id: "current-value" });
      s.appendChild(el("strong", {}, p.label + ": "));
      s.appendChild(document.createTextNode(fmt(v) + (v === null ? "" : " (rank " + p.rank[l][h] + " of " +
        p.n_measured + ")") + (p.control && v !== null ? "; control " + fmt(p.control[l][h]) : "") +
        (p.seeds && v !== null ? "; " + seedSummary(p, l, h) : "") + "."));
      box.appendChild(s);
    }
    // its top-ranked measures: the best rank relative to the heads measured
    const ranked = [];
    PROPS.forEach(({ p, f }) => {
      if (p.kind !== "number" || !p.rank || p.values[l][h] === null || p.n_measured < 4) return;
      // a rank many heads share (per-layer normalised scores) says little about this head
      let ties = 0;
      p.rank.forEach(row => row.forEach(r => { if (r === p.rank[l][h]) ties++; }));
      if (ties > 2) return;
      ranked.push({ p: p, f: f, q: (p.rank[l][h] - 1) / p.n_measured });
    });
    ranked.sort((a, b) => a.q - b.q || a.p.rank[l][h] - b.p.rank[l][h]);
    if (!ranked.length) return;
    box.appendChild(el("p", { class: "note" }, "Its five best-ranked measures, each beside the " +
      "random-weights control where the compendium has one:"));
    const t = el("table", { class: "values glance" });
    const hr = el("tr");
    ["measure", "this model", "control", "rank"].forEach(x => hr.appendChild(el("th", { scope: "col" }, x)));
    t.appendChild(hr);
    ranked.slice(0, 5).forEach(({ p, f }) => {
      const tr = el("tr", { "data-prop": p.id });
      const td = el("td");
      td.appendChild(propButton(p));
      td.appendChild(el("span", { class: "note" }, " (" + f.title.replace(/ \(.*\)$/, "") + ")"));
      tr.appendChild(td);
      tr.appendChild(el("td", {}, fmt(p.values[l][h])));
      tr.appendChild(el("td", {}, p.control ? fmt(p.control[l][h]) : "–"));
      tr.appendChild(el("td", {}, p.rank[l][h] + " / " + p.n_measured));
      t.appendChild(tr);
    });
    box.appendChild(t);
  }

  function renderSentences(box, name) {
    const S = D.sentences || {};
    box.appendChild(el("h3", {}, "Sentences it attends in"));
    if (S.unavailable) { box.appendChild(el("p", { class: "note", id: "sentences-unavailable" }, S.unavailable)); return; }
    const hd = S.heads && S.heads[name];
    if (!hd) { box.appendChild(el("p", { class: "note" }, NM + " for this head.")); return; }
    // notebook 02's rule: dep2head, the dependent attends to its head more than to any other
    // word; head2dep, no other word attends to the dependent as much as its head does
    const dir = hd.direction === "dep2head" ?
      "the dependent attends to its head word more than to any other word" :
      "the head word attends to its dependent more than any other word does";
    box.appendChild(el("p", { class: "summary", id: "role" }, "Its best-ranked syntax relation: " +
      hd.relation + " (" + (hd.direction === "dep2head" ? "dependent → head" : "head → dependent") +
      "), rank " + hd.rank + " of " + L * H + " heads, accuracy " + pct(hd.accuracy) +
      "% in notebook 02; right on " + hd.hits + " of " + hd.total + " " + hd.relation +
      " edges in this sample."));
    if (!hd.examples.length) {
      box.appendChild(el("p", { class: "note" }, "No sentence of the sample where it is right on a " +
        "gold " + hd.relation + " edge."));
      return;
    }
    const strongest = Math.max.apply(null, hd.examples.map(e => e.w));
    if (strongest < 0.2) {
      box.appendChild(el("p", { class: "warn", id: "weak-role" }, "A weak role: even in these " +
        "sentences at most " + strongest.toFixed(2) + " of its attention falls on the " +
        hd.relation + " word; its strongest patterns are in 'At a glance' above."));
    }
    const ol = el("ol", { class: "sentences" });
    hd.examples.forEach(e => {
      const words = S.sentences[e.s];
      const li = el("li", { "data-weight": String(e.w) });
      words.forEach((w, i) => {
        if (i) li.appendChild(document.createTextNode(" "));
        if (i === e.from) li.appendChild(el("mark", { class: "from", title: "attending word" }, w));
        else if (i === e.to) li.appendChild(el("mark", { class: "to", title: "attended word" }, w));
        else li.appendChild(document.createTextNode(w));
      });
      li.appendChild(el("span", { class: "note" }, " — " + words[e.from] + " → " + words[e.to] +
        ", weight " + e.w.toFixed(2)));
      ol.appendChild(li);
    });
    box.appendChild(ol);
    box.appendChild(el("p", { class: "note" }, "Where it is right on a gold " + hd.relation +
      " edge, as notebook 02 scores it (" + dir + "), with the most attention on the edge; " +
      "the attending word in blue, the attended word in amber and bold; one per sentence, " +
      "from " + S.source + ", through this model."));
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
        const a = el("a", { href: "#" + other + (current ? "&p=" + encodeURIComponent(current.p.id) : ""),
                            "data-goto": other }, other);
        a.addEventListener("click", e => {
          e.preventDefault();
          const [ol, oh] = parseLabel(other);
          select(ol, oh, { announce: true });
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

  // Where a card links: the claim's page in the book, and its notebook's Verdicts section
  // (D.book: the book rewrites root, claims and html in its copy of the page).
  function notebookHref(nb) {
    const B = D.book, path = B && B.notebooks ? B.notebooks[nb] : null;
    if (!path) return null;
    return B.root + (B.html ? path.replace(/\.ipynb(#|$)/, ".html$1") : path);
  }

  // The figures that draw a family's numbers (D.families[].figures: repository-relative
  // paths, reached through the same root as the notebooks), each with what it draws.
  function figureLinks(f) {
    if (!f.figures || !f.figures.length) return null;
    const root = D.book && D.book.root !== undefined ? D.book.root : "";
    const p = el("p", { class: "note figures", "data-family": f.id }, "Figures (notebook " + f.notebook + "): ");
    f.figures.forEach((g, i) => {
      if (i) p.appendChild(document.createTextNode("; "));
      p.appendChild(el("a", { href: root + g.path, class: "figure" }, g.path.split("/").pop()));
      p.appendChild(document.createTextNode(" (" + g.draws + ")"));
    });
    return p;
  }

  function claimCard(r, name, paper) {
    const div = el("div", { class: "claim", "data-kind": paper ? "paper" : "run" });
    const B = D.book || {};
    if (B.claims && r.id) {
      const a = el("a", { href: B.claims + r.id + ".html", class: "claim-page" });
      a.appendChild(el("strong", {}, r.claim));
      div.appendChild(a);
    } else {
      div.appendChild(el("strong", {}, r.claim));
    }
    div.appendChild(el("span", { class: "note" }, " (" + [r.paper, r.notebook && "notebook " + r.notebook]
      .filter(Boolean).join(", ") + ")"));
    const links = el("p", { class: "claim-links" });
    // In the book a notebook's page lists its claims, each row anchored #claim-<id>: the card
    // opens this claim's row; the committed page opens the notebook's Verdicts section.
    const inBook = (D.book || {}).html && r.id;
    let nbHref = notebookHref(r.notebook);
    if (nbHref && inBook) nbHref = nbHref.replace(/#.*$/, "") + "#claim-" + r.id;
    if (nbHref) links.appendChild(el("a", { href: nbHref, class: "claim-notebook" },
      "notebook " + r.notebook + (inBook ? ", this claim's row" : ", its verdicts")));
    if (r.property && PROPS.get(r.property) && !(current && current.p.id === r.property)) {
      if (links.childNodes.length) links.appendChild(document.createTextNode(" · "));
      links.appendChild(el("a", { href: "#" + name + "&p=" + encodeURIComponent(r.property),
                                  class: "claim-property" },
        "colour by what it claims: " + PROPS.get(r.property).p.label));
    }
    if (links.childNodes.length) div.appendChild(links);
    const dl = el("dl");
    const add = (k, v, cls) => {
      if (!v) return;
      dl.appendChild(el("dt", {}, k));
      dl.appendChild(el("dd", cls ? { class: cls } : {}, v));
    };
    add("the paper's words", r.quote);
    add("paper (BERT-base)", r.paper_value);
    add("this run", r.this_run);
    add("verdict", r.verdict, /^(yes|held)/i.test(r.verdict) ? "verdict-yes" : /^(no|not)/i.test(r.verdict) ? "verdict-no" : "");
    add("per task", r.per_task);
    add("control's verdict", r.control_verdict);
    add("test", r.test);
    add("resampled unit", r.unit);
    add("interval", r.interval);
    add("smallest detectable effect", r.mde);
    add("p", r.p_value);
    add("corrected p", r.p_adjusted + (r.family ? " (" + r.family + ")" : ""));
    add("criterion", r.criterion);
    add("note", r.note);
    div.appendChild(dl);
    return div;
  }

  function renderClaims(box, name) {
    const c = D.claims;
    box.appendChild(el("h3", {}, "Verdicts naming head " + name));
    if (c.note) box.appendChild(el("p", { class: "note" }, c.note));
    if (!c.source) return;
    const mine = c.rows.filter(r => r.heads.indexOf(name) >= 0);
    const paper = c.rows.filter(r => (r.paper_heads || []).indexOf(name) >= 0 && r.heads.indexOf(name) < 0);
    if (!mine.length && !paper.length) {
      box.appendChild(el("p", { class: "note", id: "no-claims" }, "No row of " + c.source +
        " names head " + name + ", neither as this run's head nor as the paper's."));
      return;
    }
    if (mine.length) {
      box.appendChild(el("p", { class: "note" }, mine.length + " ledger row(s) name this model's head " + name + ":"));
      mine.forEach(r => box.appendChild(claimCard(r, name, false)));
    }
    if (paper.length) {
      box.appendChild(el("p", { class: "note", id: "paper-claims" }, paper.length + " ledger row(s) name " +
        "BERT-base's head " + name + " (the paper's numbering, another model's head): each " +
        "was tested on this model's own best head, named under 'this run':"));
      paper.forEach(r => box.appendChild(claimCard(r, name, true)));
    }
    box.appendChild(el("p", { class: "note" }, "From " + c.source + "; 'no' with a " +
      "positive difference means the difference did not reach significance after correction."));
  }

  function renderAll(box, l, h, name) {
    box.appendChild(el("h3", {}, "Everything measured on head " + name));
    box.appendChild(el("p", { class: "note" }, "Each value beside the same measure on the " +
      "random-weights control (where the compendium has one) and the head's rank among all " +
      L * H + " heads; seed means with their spread, each seed on demand."));
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
      const extra = f.properties.some(p => p.baseline || p.seeds);
      ["property", "this model", "control", "rank"].concat(extra ? ["statistics"] : [])
        .forEach(x => hr.appendChild(el("th", { scope: "col" }, x)));
      t.appendChild(hr);
      f.properties.forEach(p => {
        const tr = el("tr", { "data-prop": p.id });
        if (current && current.p.id === p.id) tr.classList.add("current");
        const tdName = el("td");
        tdName.appendChild(propButton(p));
        tr.appendChild(tdName);
        tr.appendChild(valueCell(p.values[l][h], p.id, "model"));
        if (p.control) tr.appendChild(valueCell(p.control[l][h], p.id, "control"));
        else tr.appendChild(el("td", { title: "no random-weights control for this measure" }, "–"));
        const r = p.rank ? p.rank[l][h] : null;
        tr.appendChild(el("td", { class: "rank" }, p.rank ? (r === null ? "–" : r + " / " + p.n_measured) : ""));
        if (extra) tr.appendChild(extraCell(p, l, h));
        t.appendChild(tr);
      });
      d.appendChild(t);
      d.appendChild(el("p", { class: "note" }, "From " + f.sources.join(", ") +
        (f.properties.some(p => p.control) ? "; control: " + f.control_note : "") + "."));
      const figs = figureLinks(f);
      if (figs) d.appendChild(figs);
      box.appendChild(d);
    });
  }

  // --- the top-N table ---------------------------------------------------------------
  function renderTop() {
    const p = current.p, box = $("top-table");
    box.textContent = "";
    $("top-title").textContent = "Top heads: " + p.label;
    if (p.kind !== "number") {
      box.appendChild(el("p", { class: "note" }, "A label, not a number: choose a measured number to rank heads."));
      return;
    }
    const rows = [];
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
      if (p.values[l][h] === null) continue;
      rows.push({ head: label(l, h), l: l, h: h, value: p.values[l][h], rank: p.rank[l][h],
                  control: p.control ? p.control[l][h] : null,
                  spread: p.spread ? p.spread[l][h] : null,
                  holm: p.seeds && p.seeds.holm ? p.seeds.holm.filter((g, i) =>
                    g[l][h] === 1 && p.seeds.values[i][l][h] < 0).length : null });
    }
    const key = sortKey;
    const cmp = (a, b) => {
      if (key === "head") return sortDir * (a.l - b.l || a.h - b.h);
      const x = a[key], y = b[key];
      if (x === null && y === null) return a.rank - b.rank;
      if (x === null) return 1;
      if (y === null) return -1;
      return sortDir * (x - y) || a.rank - b.rank;
    };
    rows.sort(cmp);
    const n = parseInt($("top-n").value, 10);
    const shown = n ? rows.slice(0, n) : rows;
    const t = el("table", { class: "values", id: "top-rows" });
    t.appendChild(el("caption", { class: "sr-only" }, "Heads ranked by " + p.label + "; the column headers sort"));
    const hr = el("tr");
    const cols = [["head", "head"], ["value", "value"], ["control", "control"], ["rank", "rank"]];
    if (p.spread) cols.push(["spread", "seed sd"]);
    if (p.seeds && p.seeds.holm) cols.push(["holm", "Holm drops"]);
    cols.forEach(([k, text]) => {
      const th = el("th", { scope: "col", "aria-sort": k === sortKey ? (sortDir > 0 ? "ascending" : "descending") : "none" });
      const b = el("button", { type: "button", class: "sort", "data-sort": k }, text + (k === sortKey ? (sortDir > 0 ? " ▲" : " ▼") : ""));
      b.addEventListener("click", () => {
        if (sortKey === k) sortDir = -sortDir; else { sortKey = k; sortDir = k === "holm" ? -1 : 1; }
        renderTop();
        const again = document.querySelector('#top-rows button.sort[data-sort="' + k + '"]');
        if (again) again.focus();
      });
      th.appendChild(b);
      hr.appendChild(th);
    });
    t.appendChild(hr);
    shown.forEach(r => {
      const tr = el("tr", { "data-head": r.head });
      const td = el("td");
      const b = el("button", { type: "button", class: "head" }, r.head);
      b.addEventListener("click", () => { setFocus(r.l, r.h, false); select(r.l, r.h, { announce: true }); });
      td.appendChild(b);
      tr.appendChild(td);
      tr.appendChild(el("td", { "data-value": String(r.value) }, fmt(r.value)));
      tr.appendChild(el("td", {}, r.control === null ? "–" : fmt(r.control)));
      tr.appendChild(el("td", {}, String(r.rank)));
      if (p.spread) tr.appendChild(el("td", {}, r.spread === null ? "–" : fmt(r.spread)));
      if (p.seeds && p.seeds.holm) tr.appendChild(el("td", { class: "holm" }, r.holm + " of " + p.seeds.labels.length));
      t.appendChild(tr);
    });
    box.appendChild(t);
    box.appendChild(el("p", { class: "note" }, rows.length + " heads measured; rank 1 = " +
      (p.order === "asc" ? "lowest" : "highest") + ". " + (p.note || "")));
    const figs = figureLinks(current.f);
    if (figs) box.appendChild(figs);
  }

  // --- example maps --------------------------------------------------------------------
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
      const a = mapsOf(k), off = (l * H + h) * n * n;
      // the text alternative: each token's strongest target, the strongest links first
      const links = [];
      for (let i = 0; i < n; i++) {
        let best = 0;
        for (let j = 1; j < n; j++) if (a[off + i * n + j] > a[off + i * n + best]) best = j;
        links.push([a[off + i * n + best] / 255, s.tokens[i], s.tokens[best]]);
      }
      links.sort((x, y) => y[0] - x[0]);
      const alt = links.slice(0, 4).map(x => x[1] + " → " + x[2] + " " + x[0].toFixed(2)).join("; ");
      const cv = el("canvas", { width: size, height: size, role: "img", "aria-label": "Attention map of head " +
        label(l, h) + " on “" + s.text + "”; strongest links: " + alt });
      const g = cv.getContext("2d");
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
      fig.appendChild(el("figcaption", {}, "“" + s.text + "” rows attend to columns; white 0, dark blue 1. " +
        "Strongest: " + alt + "."));
      wrap.appendChild(fig);
    });
    box.appendChild(wrap);
  }

  // --- search ------------------------------------------------------------------------
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
    const nav = $("others");
    (D.others || []).forEach(o => {
      nav.appendChild(document.createTextNode("The other model: "));
      nav.appendChild(el("a", { href: o.href, "data-other": o.profile }, o.name + " (" + o.num_layers +
        " × " + o.num_heads + ")"));
      nav.appendChild(document.createTextNode(" — each head links to its best head on the same property at the same relative depth, and overall (the same role). "));
    });
    if (D.others && D.others.length) $("shared-label").textContent = "colour scale shared with " +
      D.others.map(o => o.name).join(", ");
    buildSelect();
    buildGrid();
    const first = [...PROPS.values()].find(x => x.p.kind === "number");
    const h = readHash();
    setProperty(h.prop && PROPS.has(h.prop) ? h.prop :
      PROPS.has("02.All.dep2head") ? "02.All.dep2head" : first.p.id);
    $("search-form").addEventListener("submit", e => { e.preventDefault(); search($("search").value); });
    const f = $("footer");
    f.textContent = "Generated by `python -m analysis_utils atlas --profile " + D.profile +
      "` from the tables in " + D.results + "/ (each notebook's run is recorded in its " +
      "NN_provenance.json there); claims from " + (D.claims.source || "no ledger") + ". Provenance in the _provenance.json " +
      "beside this page. Attention is not explanation: these are measurements of where heads " +
      "look, not of what the model uses.";
    if (h.head) select(h.head[0], h.head[1], { announce: false });
    else { select(0, 0); history.replaceState(null, "", location.pathname + location.search); }
    reportHash(h);
    window.addEventListener("hashchange", applyHash);
  }
  init();
})();
