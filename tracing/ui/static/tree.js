// tree.js: the middle pane's two views of one tree.
//   - CallTree: the call tree (role=tree), loaded level by level (/ui/api/trees/{id}/nodes;
//     a node's children are fetched when it is expanded; a long level shows a window of
//     200 nodes with "show earlier" / "load more", so the DOM never holds a whole level),
//     rendered flat (one treeitem per visible node, aria-level for depth) so that keyboard
//     moves are sibling moves. Each node shows the first words of its input, so that calls
//     of one function tell apart. Activating a model call opens it; activating any other node
//     (an agentic call, a tool call) opens its input, output and error and expands it. It marks
//     the selected node's path (class on-path) and keeps expanded nodes and focus across live
//     refreshes. Rows never scroll the pane sideways: a long name is cut with an ellipsis (the
//     whole in its title) and the figures wrap under it when the pane is narrow.
//   - Chart: an SVG of simulated cached (read, written) vs uncached tokens per call, with the
//     simulated cost and the provider's reported cache read as lines;
//     calls are binned when there are more calls than pixels.

import { api, h, setChildren, fmtInt, fmtCost, fmtMs, tokensOf, statusBadge } from "./api.js";

const PAGE = 200; // nodes per request

export class CallTree {
  constructor(root, { onCall, onSpan }) {
    this.root = root;
    this.onCall = onCall;
    this.onSpan = onSpan;
    root.setAttribute("role", "tree");
    root.addEventListener("click", (e) => this.onClick(e));
    root.addEventListener("keydown", (e) => this.onKey(e));
    root.addEventListener("focusin", (e) => {
      const el = e.target.closest(".tnode");
      if (el) this.setTabStop(el);
    });
    this.clear();
  }

  clear() {
    this.epoch = (this.epoch || 0) + 1;
    this.treeId = null;
    this.levels = new Map(); // parent span id ("" for the top) -> {key, depth, offset, ids, total, next, ...}
    this.nodes = new Map(); // span id -> {data, depth, parentKey, expanded, el, loading}
    this.path = new Set();
    this.selected = null;
    this.tabEl = null;
    this.ready = Promise.resolve();
    this.root.replaceChildren();
  }

  /** Show tree `id` (its top level). */
  open(id) {
    this.clear();
    this.treeId = id;
    this.root.append(h("p", { class: "muted", text: "loading…" }));
    const epoch = this.epoch;
    this.ready = this.loadLevel("", 0).then(
      () => {
        const els = this.levelEls("");
        this.root.replaceChildren(...(els.length ? els : [h("p", { class: "muted", text: "no spans" })]));
        this.setTabStop(this.root.querySelector(".tnode"));
        const top = this.levels.get("").ids;
        if (top.length === 1) return this.expand(top[0]); // a lone root: show its children
      },
      (err) => {
        if (epoch === this.epoch) this.root.replaceChildren(h("p", { class: "error", text: `could not load the tree: ${err.message}` }));
      },
    );
    return this.ready;
  }

  // ---- loading ---------------------------------------------------------------------------
  // A level shows a window of its nodes: ids = the nodes at [offset, offset + ids.length) of
  // the parent's children, with "show earlier" / "load more" rows around it when there are more.

  /** Fetch `limit` nodes of a level from `offset` and put them in its window: "append" after
   *  it, "prepend" before it, or "replace" it. Returns the ids it added. */
  async loadLevel(key, offset, mode = "append", limit = PAGE) {
    const epoch = this.epoch;
    const r = await api.nodes(this.treeId, key || null, offset, limit);
    if (epoch !== this.epoch) throw new Error("stale");
    let lvl = this.levels.get(key);
    if (!lvl) {
      lvl = { key, depth: key ? this.nodes.get(key).depth + 1 : 0, offset: 0, ids: [], total: 0, next: null, moreEl: null, earlierEl: null };
      this.levels.set(key, lvl);
    }
    const have = new Set(mode === "replace" ? [] : lvl.ids);
    const added = [];
    for (const n of r.nodes) {
      this.upsert(n, lvl);
      if (!have.has(n.span_id)) added.push(n.span_id);
    }
    if (mode === "replace") Object.assign(lvl, { offset, ids: added, next: r.next_offset });
    else if (mode === "prepend") Object.assign(lvl, { offset, ids: added.concat(lvl.ids) });
    else Object.assign(lvl, { ids: lvl.ids.concat(added), next: r.next_offset });
    lvl.total = r.total;
    return added;
  }

  upsert(data, lvl) {
    let node = this.nodes.get(data.span_id);
    if (!node) {
      node = { data, depth: lvl.depth, parentKey: lvl.key, expanded: false, el: h("div", { class: "tnode" }) };
      this.nodes.set(data.span_id, node);
      this.renderNode(node);
    } else if (JSON.stringify(node.data) !== JSON.stringify(data)) {
      node.data = data; // only what changed is redrawn: elements stay put under the pointer
      this.renderNode(node);
    }
    return node;
  }

  /** The DOM rows of a level: "show earlier", its nodes with their expanded subtrees, "load more". */
  levelEls(key) {
    const lvl = this.levels.get(key);
    const out = [];
    if (!lvl) return out;
    if (lvl.offset > 0) out.push(this.pager(lvl, "earlier", `show earlier (${fmtInt(lvl.offset)} before)`));
    for (const id of lvl.ids) {
      const node = this.nodes.get(id);
      out.push(node.el);
      if (node.expanded) out.push(...this.levelEls(id));
    }
    if (lvl.next !== null && lvl.next !== undefined) {
      out.push(this.pager(lvl, "more", `load more (${fmtInt(lvl.offset + lvl.ids.length)} of ${fmtInt(lvl.total)} shown)`));
    }
    return out;
  }

  pager(lvl, which, text) {
    const prop = which === "more" ? "moreEl" : "earlierEl";
    lvl[prop] ||= h("div", { class: `tnode pager ${which}`, role: "treeitem", tabindex: "-1", "data-pager": which, "data-level": lvl.key });
    lvl[prop].setAttribute("aria-level", String(lvl.depth + 1));
    lvl[prop].style.setProperty("--depth", lvl.depth);
    lvl[prop].textContent = text;
    return lvl[prop];
  }

  visible(key) {
    if (key === "") return true;
    const node = this.nodes.get(key);
    return !!node && node.expanded && node.el.isConnected;
  }

  /** Put the level's rows in the DOM after its parent, reusing what is there. */
  relayout(key, oldEls) {
    const newEls = this.levelEls(key);
    const core = (els) => (els.length && els[els.length - 1].classList.contains("more") ? els.slice(0, -1) : els);
    const [oldCore, newCore] = [core(oldEls), core(newEls)];
    const focused = document.activeElement;
    const prefix = oldCore.every((el, i) => newCore[i] === el);
    const anchor = key ? this.nodes.get(key).el : null;
    const keep = prefix ? oldCore : [];
    const rest = newEls.slice(keep.length);
    const after = keep.length ? keep[keep.length - 1] : anchor;
    const still = new Set(prefix ? newEls : []);
    for (const el of oldEls) if (!still.has(el)) el.remove();
    if (after) after.after(...rest);
    else this.root.prepend(...rest);
    this.root.querySelectorAll(":scope > p.muted").forEach((p) => p.remove());
    if (focused && focused !== document.activeElement && focused.isConnected) focused.focus({ preventScroll: true });
  }

  expand(id) {
    const node = this.nodes.get(id);
    if (!node || !node.data.children) return Promise.resolve();
    if (node.loading) return node.loading;
    if (node.expanded) return Promise.resolve();
    node.expanded = true;
    this.renderNode(node);
    if (this.levels.has(id)) {
      if (node.el.isConnected) node.el.after(...this.levelEls(id));
      if (this.levels.get(id).stale) return this.refreshLevel(id, this.epoch).catch(() => {});
      return Promise.resolve();
    }
    node.el.setAttribute("aria-busy", "true");
    node.loading = this.loadLevel(id, 0)
      .then(() => {
        if (node.expanded && node.el.isConnected) node.el.after(...this.levelEls(id));
      })
      .catch(() => {
        node.expanded = false;
      })
      .finally(() => {
        node.loading = null;
        node.el.removeAttribute("aria-busy");
        this.renderNode(node);
      });
    return node.loading;
  }

  collapse(id) {
    const node = this.nodes.get(id);
    if (!node || !node.expanded || node.loading) return;
    const focusInside = this.levelEls(id).includes(document.activeElement);
    this.levelEls(id).forEach((el) => el.remove());
    node.expanded = false;
    this.renderNode(node);
    if (focusInside) this.focus(node.el);
  }

  /** "load more" (after the window) or "show earlier" (before it). */
  async page(key, which) {
    const lvl = this.levels.get(key);
    if (!lvl || lvl.loading) return;
    if (which === "more" ? lvl.next === null : lvl.offset === 0) return;
    const pagerEl = which === "more" ? lvl.moreEl : lvl.earlierEl;
    const hadFocus = pagerEl && document.activeElement === pagerEl;
    const oldEls = this.visible(key) ? this.levelEls(key) : null;
    lvl.loading = true;
    try {
      const start = Math.max(0, lvl.offset - PAGE);
      const added = which === "more"
        ? await this.loadLevel(key, lvl.next, "append")
        : await this.loadLevel(key, start, "prepend", lvl.offset - start);
      if (oldEls) this.relayout(key, oldEls);
      if (hadFocus && added.length) this.focus(this.nodes.get(added[which === "more" ? 0 : added.length - 1]).el);
    } catch {
      /* stale tree or network: the row stays */
    } finally {
      lvl.loading = false;
    }
  }

  /** New records on the server: refetch the levels on screen (as far as they were loaded);
   * collapsed ones are marked stale and refetched when next expanded. */
  async refresh() {
    if (!this.treeId) return;
    await this.ready;
    if (!this.levels.has("")) return this.open(this.treeId); // the first load failed: try again
    const epoch = this.epoch;
    for (const [key, lvl] of [...this.levels]) {
      if (epoch !== this.epoch) return;
      if (this.visible(key)) await this.refreshLevel(key, epoch);
      else lvl.stale = true;
    }
    this.setTabStop(this.tabEl && this.tabEl.isConnected ? this.tabEl : this.root.querySelector(".tnode"));
  }

  async refreshLevel(key, epoch) {
    const lvl = this.levels.get(key);
    const want = lvl.offset + Math.max(lvl.ids.length, PAGE);
    const ids = [];
    let offset = lvl.offset;
    let r;
    do {
      r = await api.nodes(this.treeId, key || null, offset, Math.min(1000, want - offset));
      if (epoch !== this.epoch) return;
      for (const n of r.nodes) {
        this.upsert(n, lvl);
        ids.push(n.span_id);
      }
      offset = r.next_offset;
    } while (offset !== null && offset < want);
    const oldEls = this.visible(key) ? this.levelEls(key) : null;
    Object.assign(lvl, { ids, total: r.total, next: r.next_offset, stale: false });
    if (oldEls) this.relayout(key, oldEls);
    else if (lvl.moreEl && lvl.next === null) lvl.moreEl.remove();
  }

  // ---- the selected call's path --------------------------------------------------------

  /** Mark `path` (span ids, top first, the call last), expanding levels down to the call. */
  async showPath(path) {
    const token = (this.pathToken = (this.pathToken || 0) + 1);
    this.path = new Set(path || []);
    this.selected = path && path.length ? path[path.length - 1] : null;
    for (const node of this.nodes.values()) this.mark(node);
    if (!this.selected) return;
    await this.ready.catch(() => {});
    let start = path.findIndex((id) => this.levels.get("")?.ids.includes(id));
    if (start < 0) start = (await this.scanFor("", path[0], token)) ? 0 : -1;
    if (start < 0) return;
    for (let i = start; i < path.length; i++) {
      if (i > start) {
        await this.expand(path[i - 1]);
        if (!(await this.scanFor(path[i - 1], path[i], token))) break;
      }
      if (token !== this.pathToken) return;
    }
    const sel = this.nodes.get(this.selected);
    if (sel && sel.el.isConnected && token === this.pathToken) {
      revealIn(this.root, sel.el);
      this.setTabStop(sel.el);
    }
  }

  /** Make node `id` part of level `key`'s window: find its position (reading ids 1,000 at a
   *  time, creating nothing) and show the page around it. The DOM never holds the whole level. */
  async scanFor(key, id, token) {
    const lvl = this.levels.get(key);
    if (!lvl || token !== this.pathToken) return false;
    if (lvl.ids.includes(id)) return true;
    let pos = -1;
    for (let off = 0; pos < 0 && off !== null; ) {
      const r = await api.nodes(this.treeId, key || null, off, 1000);
      if (token !== this.pathToken) return false;
      const k = r.nodes.findIndex((n) => n.span_id === id);
      if (k >= 0) pos = off + k;
      else off = r.next_offset;
    }
    if (pos < 0) return false;
    const oldEls = this.visible(key) ? this.levelEls(key) : null;
    await this.loadLevel(key, Math.max(0, pos - PAGE / 2), "replace");
    if (oldEls) this.relayout(key, oldEls);
    return lvl.ids.includes(id);
  }

  mark(node) {
    const id = node.data.span_id;
    node.el.classList.toggle("on-path", this.path.has(id));
    node.el.setAttribute("aria-selected", String(id === this.selected));
  }

  // ---- rendering and input -------------------------------------------------------------

  renderNode(node) {
    const d = node.data;
    const el = node.el;
    el.setAttribute("role", "treeitem");
    el.setAttribute("data-testid", "node");
    el.dataset.span = d.span_id;
    if (d.call !== null && d.call !== undefined) el.dataset.call = String(d.call);
    else delete el.dataset.call;
    el.setAttribute("aria-level", String(node.depth + 1));
    if (d.children > 0) el.setAttribute("aria-expanded", String(node.expanded));
    else el.removeAttribute("aria-expanded");
    if (el.tabIndex !== 0) el.tabIndex = -1;
    el.className = `tnode kind-${d.kind || "other"}`;
    el.style.setProperty("--depth", node.depth);
    const label = d.function || d.name || d.span_id;
    el.title = [d.name || label, d.excerpt ? `(${d.excerpt})` : "", d.error ? `— ${d.error}` : ""].filter(Boolean).join(" ");
    this.mark(node);
    setChildren(el,
      d.children > 0
        ? h("button", { class: "twisty", type: "button", tabindex: "-1", "aria-label": node.expanded ? "collapse" : "expand", text: node.expanded ? "▾" : "▸" })
        : h("span", { class: "twisty", "aria-hidden": "true" }),
      d.call !== null && d.call !== undefined
        ? h("span", { class: "badge llm", text: `LLM #${d.call}` })
        : d.kind && d.kind !== "other" ? h("span", { class: `badge k-${d.kind}`, text: d.kind }) : null,
      d.reconstructed ? h("span", { class: "badge recon", text: "span", title: "reconstructed from another instrumentation's span, not verified" }) : null,
      h("span", { class: "label" },
        h("span", { class: "name", text: label }),
        d.excerpt ? h("span", { class: "ex", "data-testid": "node-excerpt", text: d.excerpt }) : null),
      h("span", { class: "nums" },
        statusBadge(d.status),
        h("span", { class: "m", text: fmtMs(d.duration_ms) }),
        h("span", { class: "m", text: `${fmtInt(tokensOf(d.usage))} tok`, title: "input + output tokens of the subtree" }),
        h("span", { class: "m", text: fmtCost(d.cost) })),
    );
  }

  setTabStop(el) {
    if (!el) return;
    if (this.tabEl && this.tabEl !== el) this.tabEl.tabIndex = -1;
    el.tabIndex = 0;
    this.tabEl = el;
  }

  focus(el) {
    if (!el) return;
    this.setTabStop(el);
    el.focus();
  }

  activate(el) {
    if (el.dataset.pager) return this.page(el.dataset.level, el.dataset.pager);
    const node = this.nodes.get(el.dataset.span);
    if (!node) return;
    if (node.data.call !== null && node.data.call !== undefined) this.onCall(node.data.call);
    else {
      this.onSpan(node.data.span_id);
      if (!node.expanded) this.expand(node.data.span_id);
    }
  }

  toggle(node) {
    const id = node.data.span_id;
    if (node.expanded) this.collapse(id);
    else this.expand(id);
  }

  onClick(e) {
    const el = e.target.closest(".tnode");
    if (!el) return;
    this.setTabStop(el);
    const twisty = e.target.closest("button.twisty");
    if (twisty) {
      const node = this.nodes.get(el.dataset.span);
      if (node) this.toggle(node);
    } else {
      this.activate(el);
    }
  }

  onKey(e) {
    const el = e.target.closest(".tnode");
    if (!el) return;
    const node = this.nodes.get(el.dataset.span);
    const items = () => [...this.root.querySelectorAll(".tnode")];
    let handled = true;
    switch (e.key) {
      case "ArrowDown":
        this.focus(el.nextElementSibling?.classList.contains("tnode") ? el.nextElementSibling : null);
        break;
      case "ArrowUp":
        this.focus(el.previousElementSibling?.classList.contains("tnode") ? el.previousElementSibling : null);
        break;
      case "Home":
        this.focus(items()[0]);
        break;
      case "End":
        this.focus(items().pop());
        break;
      case "ArrowRight":
        if (node && node.data.children > 0) {
          if (!node.expanded) this.expand(node.data.span_id);
          else this.focus(el.nextElementSibling);
        }
        break;
      case "ArrowLeft":
        if (node && node.expanded) this.collapse(node.data.span_id);
        else {
          const key = node ? node.parentKey : el.dataset.level;
          const parent = key ? this.nodes.get(key) : null;
          if (parent) this.focus(parent.el);
        }
        break;
      case "Enter":
      case " ":
        this.activate(el);
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  }
}

/** Scroll `box` (only it, not the page) so that `el` is in view, centred when it was out. */
function revealIn(box, el) {
  const b = box.getBoundingClientRect();
  const r = el.getBoundingClientRect();
  if (r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - (b.height - r.height) / 2;
}

// ---- chart ---------------------------------------------------------------------------------

// Bars: the simulated cache (the provider's rules over each request); the line marked
// "reported": the cache read the provider reported in each call's usage.
const SERIES = [
  ["read", "simulated: read"],
  ["write", "simulated: written"],
  ["uncached", "simulated: uncached"],
];

export class Chart {
  constructor(wrap, { onSelect }) {
    this.wrap = wrap;
    this.onSelect = onSelect;
    this.svg = h("svg", { "data-testid": "chart", role: "img", "aria-label": "tokens per call", class: "chart" });
    this.readout = h("p", { class: "readout muted", "aria-live": "off" });
    this.legend = h("p", { class: "legend" });
    wrap.replaceChildren(this.legend, this.svg, this.readout);
    this.svg.addEventListener("mousemove", (e) => this.hover(e));
    this.svg.addEventListener("mouseleave", () => (this.readout.textContent = this.summary || ""));
    this.svg.addEventListener("click", (e) => {
      const bin = this.binAt(e);
      if (bin) this.onSelect(bin.pick);
    });
    new ResizeObserver(() => {
      if (this.data && this.wrap.clientWidth !== this.width) this.draw();
    }).observe(wrap);
    this.clear();
  }

  clear() {
    this.data = null;
    this.key = null;
    this.treeId = null;
    this.svg.replaceChildren();
    this.legend.replaceChildren();
    this.readout.textContent = "";
  }

  async load(treeId, provider) {
    this.treeId = treeId;
    this.provider = provider;
    const data = await api.chart(treeId, provider);
    if (this.treeId !== treeId) return;
    const key = JSON.stringify(data);
    if (key === this.key && this.wrap.clientWidth === this.width) return; // nothing new
    this.key = key;
    this.data = data;
    this.draw();
  }

  refresh() {
    return this.treeId ? this.load(this.treeId, this.provider) : Promise.resolve();
  }

  setSelected(index) {
    this.selected = index;
    if (this.data) this.draw();
  }

  draw() {
    const { calls, totals } = this.data;
    const W = (this.width = Math.max(240, this.wrap.clientWidth));
    const H = 120;
    const pad = { l: 52, r: 56, t: 8, b: 16 };
    const pw = W - pad.l - pad.r;
    const ph = H - pad.t - pad.b;
    const n = calls.length;
    const nb = Math.max(1, Math.min(n, Math.floor(pw))); // never more bars than pixels
    const bins = [];
    for (let b = 0; b < nb && n; b++) {
      const lo = Math.floor((b * n) / nb);
      const hi = Math.max(lo + 1, Math.floor(((b + 1) * n) / nb));
      const bin = { lo, hi, read: 0, write: 0, uncached: 0, cost: 0, reported: 0, pick: calls[lo].index };
      let worst = -1;
      for (let i = lo; i < hi; i++) {
        const c = calls[i];
        bin.read += c.read;
        bin.write += c.write;
        bin.uncached += c.uncached;
        bin.cost += c.cost || 0;
        bin.reported += c.reported_read || 0;
        if (c.uncached > worst) [worst, bin.pick] = [c.uncached, c.index];
      }
      for (const k of ["read", "write", "uncached", "cost", "reported"]) bin[k] /= hi - lo; // mean per call
      bins.push(bin);
    }
    this.bins = bins;
    this.geom = { pad, bw: pw / nb };
    const maxT = Math.max(1, ...bins.map((b) => Math.max(b.read + b.write + b.uncached, b.reported)));
    const reported = this.data.reported || { calls: 0, read: 0, write: 0, cost: 0 };
    const maxC = Math.max(0, ...bins.map((b) => b.cost));
    const bw = pw / nb;
    const gap = bw >= 4 ? 1 : 0;
    const y = (v) => (v / maxT) * ph;
    const paths = { read: "", write: "", uncached: "" };
    bins.forEach((b, i) => {
      let base = pad.t + ph;
      const x = pad.l + i * bw;
      for (const [k] of SERIES) {
        const hgt = y(b[k]);
        if (hgt > 0) paths[k] += `M${x.toFixed(2)},${(base - hgt).toFixed(2)}h${(bw - gap).toFixed(2)}v${hgt.toFixed(2)}h${(-(bw - gap)).toFixed(2)}z`;
        base -= hgt;
      }
    });
    const repPts = reported.calls ? bins.map((b, i) => `${(pad.l + (i + 0.5) * bw).toFixed(1)},${(pad.t + ph - y(b.reported)).toFixed(1)}`).join(" ") : "";
    const costPts = maxC > 0 ? bins.map((b, i) => `${(pad.l + (i + 0.5) * bw).toFixed(1)},${(pad.t + ph - (b.cost / maxC) * ph).toFixed(1)}`).join(" ") : "";
    const selAt = this.selected === undefined ? -1 : bins.findIndex((b) => calls.slice(b.lo, b.hi).some((c) => c.index === this.selected));
    const label = (x, yy, text, anchor = "start") => h("text", { x, y: yy, "text-anchor": anchor, class: "axis", text });
    this.svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    this.svg.setAttribute("width", W);
    this.svg.setAttribute("height", H);
    this.svg.setAttribute("aria-label", `tokens per call for ${fmtInt(n)} calls: simulated ${fmtInt(totals.read)} read from cache, ${fmtInt(totals.write)} written, ${fmtInt(totals.uncached)} uncached; reported by the provider ${fmtInt(reported.read)} read`);
    setChildren(this.svg,
      h("line", { x1: pad.l, x2: pad.l + pw, y1: pad.t + ph, y2: pad.t + ph, class: "baseline" }),
      ...SERIES.map(([k]) => h("path", { d: paths[k], class: `s-${k}` })),
      costPts ? h("polyline", { points: costPts, class: "s-cost" }) : null,
      repPts ? h("polyline", { points: repPts, class: "s-reported", "data-testid": "chart-reported" }) : null,
      selAt >= 0 ? h("line", { x1: pad.l + (selAt + 0.5) * bw, x2: pad.l + (selAt + 0.5) * bw, y1: pad.t, y2: pad.t + ph, class: "sel" }) : null,
      label(pad.l - 4, pad.t + 8, fmtInt(Math.round(maxT)), "end"),
      label(pad.l - 4, pad.t + ph, "0", "end"),
      maxC > 0 ? label(pad.l + pw + 4, pad.t + 8, fmtCost(maxC)) : null,
      n ? label(pad.l, H - 2, `#${calls[0].index}`) : null,
      n > 1 ? label(pad.l + pw, H - 2, `#${calls[n - 1].index}`, "end") : null,
    );
    const binned = nb < n ? ` · each bar: mean of ~${fmtInt(Math.round(n / nb))} calls` : "";
    this.legend.replaceChildren(
      ...SERIES.map(([k, text]) => h("span", { class: "key" }, h("i", { class: `sw s-${k}` }), text)),
      h("span", { class: "key" }, h("i", { class: "sw s-cost line" }), `simulated cost (${this.data.provider || "provider"})`),
      ...(reported.calls ? [h("span", { class: "key" }, h("i", { class: "sw s-reported line" }), "reported by the provider: cache read")] : []),
    );
    const said = reported.calls
      ? ` · reported by the provider (${fmtInt(reported.calls)} calls): read ${fmtInt(reported.read)} · written ${fmtInt(reported.write)} · cost ${fmtCost(reported.cost)}`
      : " · the provider reported no cache use";
    this.summary =
      `${fmtInt(n)} calls · simulated: read ${fmtInt(totals.read)} · written ${fmtInt(totals.write)} · uncached ${fmtInt(totals.uncached)}` +
      ` · cost ${fmtCost(totals.cost)} (without cache ${fmtCost(totals.cost_uncached)})${said}${binned}`;
    this.readout.textContent = this.summary;
  }

  binAt(e) {
    if (!this.bins || !this.bins.length) return null;
    const box = this.svg.getBoundingClientRect();
    const x = ((e.clientX - box.left) / box.width) * this.width;
    const i = Math.floor((x - this.geom.pad.l) / this.geom.bw);
    return this.bins[i] || null;
  }

  hover(e) {
    const b = this.binAt(e);
    if (!b) return;
    const calls = this.data.calls;
    const one1 = calls[b.lo];
    const span = b.hi - b.lo > 1 ? `calls #${calls[b.lo].index}–#${calls[b.hi - 1].index} (mean)` : `call #${one1.index} ${one1.label || ""}${one1.excerpt ? ` (${one1.excerpt})` : ""}`;
    const one = b.hi - b.lo === 1 ? calls[b.lo] : null;
    const rep = one ? (one.reported_read === null || one.reported_read === undefined ? "not reported" : `read ${fmtInt(one.reported_read)}`) : `read ${fmtInt(Math.round(b.reported))}`;
    const why = one && one.reason ? ` · ${one.reason}` : "";
    this.readout.textContent = `${span}: simulated read ${fmtInt(Math.round(b.read))} · written ${fmtInt(Math.round(b.write))} · uncached ${fmtInt(Math.round(b.uncached))} · ${fmtCost(b.cost)}; reported ${rep}${why} — click to open #${b.pick}`;
  }
}
