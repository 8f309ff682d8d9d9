// detail.js: the right pane, one model call as the model saw it (/ui/api/calls/{n}), or one
// span of the tree that is not a model call (an agentic call, a tool call: /ui/api/spans/{id})
// with its input, output and error.
//   header (function, call path, model, status, latency, usage and cost as reported, verified),
//   provider select (a what-if), the prompt cache pane (reported by the provider beside
//   simulated, the reason in one sentence, the call it was compared with), the segments in
//   order (collapsible, coloured by layer, simulated cache numbers, ▲ breakpoints, "# you are
//   here" highlighted), exchanges, what changed since the compared call (the previous call on
//   its path, else the cache's; in words, then where it starts), and the request per wire: a
//   view where multi-line strings read as text, the raw JSON beside it, a copy button (JSON). Calls another instrumentation traced ("reconstructed") get a
//   banner, their system texts, messages and output by role, the cache pane and the diff.
// Segment #seg-I in the URL fragment is expanded and scrolled to; toggling a segment updates
// the fragment with history.replaceState.

import { api, h, fmtInt, fmtCost, fmtMs, fmtTime, fmtUsage, statusBadge } from "./api.js";
import { jsonView, parsedJSON } from "./jsonview.js";

// Known stability layers -> colour class; anything else is grey ("other").
const LAYERS = {
  L0: "stable", stable: "stable",
  L1: "session", session: "session", project: "session",
  tree: "tree",
  L2: "turn", turn: "turn",
  tools: "tools",
};
const LAYER_NOTES = {
  stable: "stable for the whole session",
  session: "changes with the project / session",
  tree: "the call tree",
  turn: "this turn only",
  tools: "tool definitions",
  other: "other",
};
const layerClass = (layer) => `lay-${LAYERS[layer] || "other"}`;
const HERE = "# you are here";

export class CallDetail {
  constructor(root, { facets, facetsLoaded, onProvider, onCall }) {
    this.root = root;
    this.facets = facets; // () => the latest /ui/api/facets
    this.facetsLoaded = facetsLoaded || (() => null); // () => a promise of the first facets (settles either way)
    this.onProvider = onProvider;
    this.onCall = onCall;
    this.clear();
  }

  clear() {
    this.n = null;
    this.spanId = null;
    this.detail = null;
    this.token = (this.token || 0) + 1;
    this.root.replaceChildren(h("p", { class: "muted empty", text: "Pick a model call in the tree or the calls list to see what it saw, or another node of the tree for its input, output and error." }));
  }

  /** Load and show call `n`. Resolves to the detail (null when it could not be loaded). */
  async show(n, provider, { keep = false } = {}) {
    const token = ++this.token;
    const same = this.n === n;
    this.spanId = null;
    if (!same) {
      this.open = new Set();
      this.wire = null;
      this.root.replaceChildren(h("p", { class: "muted empty", text: `loading call #${n}…` }));
    }
    this.n = n;
    let d;
    try {
      [d] = await Promise.all([api.call(n, provider), this.facetsLoaded()]);
    } catch (err) {
      if (token === this.token) {
        this.detail = null;
        this.root.replaceChildren(h("p", { class: "error", role: "alert", text: `call #${n}: ${err.message}` }));
      }
      return null;
    }
    if (token !== this.token) return null;
    const scroll = this.root.scrollTop;
    this.detail = d;
    this.provider = provider;
    const rebuilt = d.reconstructed || d.rebuilt !== false;
    this.root.replaceChildren(d.reconstructed ? this.renderForeign(d) : rebuilt ? this.renderOurs(d) : this.renderUnrebuilt(d));
    if (same || keep) this.root.scrollTop = scroll;
    if (!same) this.applyHash();
    if (!d.reconstructed && rebuilt) this.loadRequest();
    return d;
  }

  /** Live update: reload the open call (or span) when it was still running. */
  refreshIfRunning() {
    if (!this.detail || this.detail.status !== "running") return Promise.resolve();
    if (this.spanId) return this.showSpan(this.spanId, { keep: true });
    return this.show(this.n, this.provider, { keep: true });
  }

  // ---- a span that is not a model call -----------------------------------------------------

  /** Load and show span `id` (an agentic or tool call): its input, output and error.
   *  Resolves to its data (null when it could not be loaded). */
  async showSpan(id, { keep = false } = {}) {
    const token = ++this.token;
    const same = this.spanId === id;
    this.n = null;
    this.spanId = id;
    if (!same) this.root.replaceChildren(h("p", { class: "muted empty", text: "loading…" }));
    let d;
    try {
      d = await api.span(id);
    } catch (err) {
      if (token === this.token) {
        this.detail = null;
        this.root.replaceChildren(h("p", { class: "error", role: "alert", text: `span ${id}: ${err.message}` }));
      }
      return null;
    }
    if (token !== this.token) return null;
    const scroll = this.root.scrollTop;
    this.detail = d;
    this.root.replaceChildren(this.renderSpan(d));
    if (same || keep) this.root.scrollTop = scroll;
    return d;
  }

  renderSpan(d) {
    const io = (title, testid, text, mime) => {
      const body = text === null || text === undefined
        ? h("p", { class: "muted", text: d.status === "running" && testid === "span-output" ? "not yet: it is still running" : "none recorded" })
        : ioText(text, mime);
      return h("section", { class: "block", "data-testid": testid }, h("h3", { text: title }), body);
    };
    return h("article", { class: "call span-detail", "data-testid": "span", "data-span": d.span_id, "data-kind": d.kind },
      h("header", { class: "call-head" },
        h("h2", {}, h("span", { class: `badge k-${d.kind}`, text: d.kind }), " ", d.function || d.name),
        h("p", { class: "callpath", text: d.name }),
        h("dl", { class: "meta" },
          meta("status", statusBadge(d.status)),
          meta("duration", fmtMs(d.duration_ms)),
          meta("started", fmtTime(d.start_ns)),
          meta("span", h("span", { class: "mono", text: d.span_id })))),
      d.error
        ? h("section", { class: "block", "data-testid": "span-error" },
            h("h3", { text: "Error" }),
            h("pre", { class: "text error-text", text: d.error }))
        : null,
      io("Input", "span-input", d.input, d.input_mime),
      io("Output", "span-output", d.output, d.output_mime),
    );
  }

  /** Expand the segment named by location.hash (#seg-I) and scroll it into view. */
  applyHash() {
    const m = /^#seg-(\d+)$/.exec(location.hash);
    if (!m) return;
    const seg = this.root.querySelector(`#seg-${m[1]}`);
    if (!seg) return;
    this.setOpen(seg, true);
    seg.scrollIntoView({ block: "start" });
  }

  // ---- our calls ---------------------------------------------------------------------------

  renderOurs(d) {
    const segs = d.segments || [];
    const layers = [...new Set(segs.map((s) => s.layer))];
    return h(
      "article",
      { "data-testid": "call", "data-index": d.index, class: "call" },
      this.header(d),
      this.cachePane(d),
      h("section", { class: "block", "aria-labelledby": "segs-title" },
        h("div", { class: "sec-head" },
          h("h3", { id: "segs-title", text: `Context: ${segs.length} segments` }),
          h("button", { type: "button", class: "small", text: "expand all", onclick: () => this.root.querySelectorAll(".seg").forEach((s) => this.setOpen(s, true)) }),
          h("button", { type: "button", class: "small", text: "collapse all", onclick: () => this.root.querySelectorAll(".seg").forEach((s) => this.setOpen(s, false)) }),
        ),
        h("p", { class: "legend" }, layers.map((l) => h("span", { class: "key" }, h("i", { class: `sw ${layerClass(l)}` }), `${l}: ${LAYER_NOTES[LAYERS[l] || "other"]}`)),
          h("span", { class: "key" }, h("span", { class: "bp-mark", text: "▲" }), " cache breakpoint")),
        h("div", { class: "segs" }, segs.map((s) => this.segment(s))),
      ),
      d.exchanges && d.exchanges.length
        ? h("section", { class: "block", "aria-labelledby": "ex-title" },
            h("h3", { id: "ex-title", text: `Exchanges after the context: ${d.exchanges.length}` }),
            d.exchanges.map((x, k) => this.exchange(x, k)))
        : null,
      this.diff(d),
      this.request(d),
    );
  }

  header(d) {
    const sim = d.simulation;
    const facets = this.facets();
    const named = (sim && sim.provider) || this.provider || d.provider;
    const providers = facets.providers && facets.providers.length ? facets.providers : named ? [named] : [];
    const current = named || providers[0];
    const problems = [...(d.problems || []), ...((sim && sim.what_if && sim.warnings) || [])]; // the call's own: in the cache pane
    const pct = d.tokens ? Math.round((100 * d.cacheable_tokens) / d.tokens) : 0;
    const jump = (sel) => () => this.root.querySelector(sel)?.scrollIntoView({ block: "start" });
    return h("header", { class: "call-head" },
      h("h2", {}, h("span", { class: "muted", text: `#${d.index} ` }), d.function || "(no function)"),
      d.call_path ? h("p", { class: "callpath", text: d.call_path }) : null,
      h("dl", { class: "meta" },
        meta("model", d.model || "—"),
        meta("provider", d.provider || "—"),
        meta("status", statusBadge(d.status), d.error ? h("span", { class: "error", text: ` ${d.error}` }) : null),
        meta("latency", fmtMs(d.latency_ms)),
        meta("usage (reported)", fmtUsage(d.usage)),
        meta("cost (reported usage)", fmtCost(d.cost)),
        meta("started", fmtTime(d.start_ns)),
        d.reconstructed ? null : meta("request", d.verified
          ? h("span", { class: "ok", text: "verified ✓", title: `the rebuilt request matches what was sent (sha256 ${d.request_sha256 || ""})` })
          : h("span", { class: "warn", text: "not verified", title: "the rebuilt request was not checked against what was sent" })),
      ),
      d.reconstructed ? null : h("p", { class: "total" },
        h("strong", { "data-testid": "call-total", "data-tokens": d.tokens, text: `${fmtInt(d.tokens)} tokens` }),
        ` · ${fmtInt(d.cacheable_tokens)} before the last breakpoint (${pct}% cacheable) · ${d.encoding || ""}`),
      d.reconstructed ? null : h("div", { class: "sim" },
        h("label", {}, "simulate cache for ",
          h("select", { "data-testid": "provider-select", onchange: (e) => this.onProvider(e.target.value) },
            providers.map((p) => h("option", { value: p, selected: p === current, text: p })))),
        sim ? h("span", { class: "sim-nums", "data-testid": "sim-nums" },
          ` simulated${sim.what_if ? " (what-if)" : ""}: read ${fmtInt(sim.read)} · written ${fmtInt(sim.write)} · uncached ${fmtInt(sim.uncached)} of ${fmtInt(sim.total)}`,
          sim.limit ? ` (limit ${fmtInt(sim.limit)})` : "",
          ` · ${fmtCost(sim.cost)} (without cache ${fmtCost(sim.cost_uncached)})`,
          sim.model ? h("span", { class: "muted", text: ` · ${sim.model}` }) : null) : null,
      ),
      problems.length ? h("ul", { class: "problems", role: "note" }, problems.map((p) => h("li", { text: p }))) : null,
      d.reconstructed ? null : h("nav", { class: "jump", "aria-label": "sections of this call" },
        h("button", { type: "button", class: "small", text: "segments", onclick: jump(".segs") }),
        h("button", { type: "button", class: "small", text: "diff", onclick: jump("[data-testid=diff]") }),
        h("button", { type: "button", class: "small", text: "request", onclick: jump(".req") })),
    );
  }

  segment(s) {
    const id = `seg-${s.i}`;
    const c = s.cache;
    const body = h("pre", { id: `${id}-text`, class: "text", hidden: true }, textWithHere(s.text || ""));
    const head = h("button", { type: "button", class: "seg-head", "aria-expanded": "false", "aria-controls": `${id}-text`, onclick: () => this.toggle(el) },
      h("span", { class: "chev", "aria-hidden": "true", text: "▸" }),
      h("span", { class: "seg-i muted", text: `${s.i}` }),
      h("span", { class: "comp", text: s.component }),
      h("span", { class: `pill ${layerClass(s.layer)}`, text: s.layer }),
      s.section ? h("span", { class: "muted small", text: s.section }) : null,
      h("span", { class: "tok", text: `${fmtInt(s.tokens)} tok` }),
      s.cached_prefix ? h("span", { class: "badge cached", text: "in cached prefix" }) : null,
      h("span", { class: "seg-cache", "data-testid": "seg-cache", title: "simulated prompt cache for this segment (the provider reports only totals)" },
        c ? `read ${fmtInt(c.read)} · write ${fmtInt(c.write)} · uncached ${fmtInt(c.uncached)}` : "cache …"),
      herePreview(s.text || ""),
    );
    const el = h("section", {
      class: `seg ${layerClass(s.layer)}`, id, "data-testid": "segment",
      "data-i": s.i, "data-component": s.component, "data-tokens": s.tokens, "data-layer": s.layer,
    }, h("h4", {}, head), body);
    if (this.open.has(s.i)) this.setOpen(el, true);
    return s.breakpoint ? [el, h("div", { class: "breakpoint", text: "▲ cache breakpoint" })] : el;
  }

  toggle(el) {
    const open = !el.classList.contains("open");
    this.setOpen(el, open);
    const url = location.pathname + location.search;
    if (open) history.replaceState(history.state, "", `${url}#${el.id}`);
    else if (location.hash === `#${el.id}`) history.replaceState(history.state, "", url);
  }

  setOpen(el, open) {
    el.classList.toggle("open", open);
    const head = el.querySelector(".seg-head");
    head.setAttribute("aria-expanded", String(open));
    head.querySelector(".chev").textContent = open ? "▾" : "▸";
    el.querySelector("pre").hidden = !open;
    const i = Number(el.dataset.i);
    if (!Number.isNaN(i) && el.dataset.testid === "segment") {
      if (open) this.open.add(i);
      else this.open.delete(i);
    }
  }

  exchange(x, k) {
    const c = x.cache || {};
    const el = h("section", { class: "seg lay-exchange", id: `ex-${k}` },
      h("h4", {}, h("button", { type: "button", class: "seg-head", "aria-expanded": "false", "aria-controls": `ex-${k}-text`, onclick: () => this.setOpen(el, !el.classList.contains("open")) },
        h("span", { class: "chev", "aria-hidden": "true", text: "▸" }),
        h("span", { class: "comp", text: x.kind }),
        h("span", { class: "tok", text: `${fmtInt(x.tokens)} tok` }),
        x.cache ? h("span", { class: "seg-cache", text: `read ${fmtInt(c.read)} · write ${fmtInt(c.write)} · uncached ${fmtInt(c.uncached)}` }) : null)),
      h("pre", { id: `ex-${k}-text`, class: "text", hidden: true, text: x.text || "" }));
    return el;
  }

  diff(d) {
    const df = d.diff;
    const attrs = { "data-testid": "diff", class: "block diff", "aria-labelledby": "diff-title" };
    if (!df) {
      return h("section", attrs, h("h3", { id: "diff-title", text: "What changed" }),
        h("p", { class: "muted", text: "No earlier call on its path, and none its prompt cache was compared with (or it cannot be rebuilt): nothing to compare with." }));
    }
    const link = (n) => h("a", { href: `/ui/calls/${n}`, onclick: (e) => { e.preventDefault(); this.onCall(n); }, text: `call ${n}` });
    const title = h("h3", { id: "diff-title" }, `What changed since `, link(df.previous));
    const why = df.basis === "path"
      ? ["call ", String(df.previous), " is the previous call on its path: made in the same agentic call, or in one it runs under"]
      : ["call ", String(df.previous), " is the call its prompt cache was compared with (no earlier call on its path)"];
    const other = df.basis === "path" && df.cache_compared !== null && df.cache_compared !== undefined && df.cache_compared !== df.previous
      ? ["; the prompt cache compared it with ", link(df.cache_compared)]
      : [];
    const basis = h("p", { class: "muted basis", "data-testid": "diff-basis", "data-basis": df.basis || "" }, ...why, ...other, ".");
    const words = h("ul", { class: "words", "data-testid": "diff-words" }, (df.words || []).map((w) => h("li", { text: w })));
    const common = { ...attrs, "data-previous": df.previous, "data-basis": df.basis || "" };
    if (df.same) return h("section", { ...common, "data-same": "true" }, title, basis, words);
    const segLink = df.segment !== null && df.segment !== undefined
      ? h("a", { href: `#seg-${df.segment}`, onclick: (e) => { e.preventDefault(); history.replaceState(history.state, "", `${location.pathname}${location.search}#seg-${df.segment}`); this.applyHash(); }, text: `segment ${df.segment} (${df.component || "?"})` })
      : null;
    const [before, after] = excerpts(df.before || "", df.after || "");
    const partNote = df.part ? `first change in ${PART_NAMES[df.part] || df.part} ${df.index} at character ${fmtInt(df.offset)}` : "";
    const where = segLink || partNote
      ? h("p", { class: "muted" }, segLink ? ["first change in ", segLink] : partNote,
          df.byte !== null && df.byte !== undefined ? ` at byte ${fmtInt(df.byte)}` : "",
          !df.part && df.offset !== null && df.offset !== undefined ? ` (byte ${fmtInt(df.offset)} of the whole context)` : "",
          df.reason && df.reason.includes(": ") ? ` — ${df.reason.slice(df.reason.indexOf(": ") + 2)}` : "")
      : null;
    return h("section", { ...common, "data-component": df.component ?? "", "data-segment": df.segment ?? "", "data-part": df.part ?? "", "data-item": df.index ?? "" },
      title, basis, words, where,
      where ? h("div", { class: "excerpts" },
        h("div", {}, h("h4", { text: `before (call ${df.previous})` }), h("pre", { class: "text before" }, before)),
        h("div", {}, h("h4", { text: `after (call ${d.index})` }), h("pre", { class: "text after" }, after))) : null,
    );
  }

  request(d) {
    const facets = this.facets();
    const wires = facets.wires && facets.wires.length ? [...facets.wires] : [d.wire];
    if (d.wire && !wires.includes(d.wire)) wires.unshift(d.wire);
    this.wire ||= d.wire || wires[0];
    this.reqJSON = null;
    this.reqView = h("div", { "data-testid": "request", class: "text json jv-wrap", tabindex: "0", "aria-label": "the request, multi-line strings as text", text: "loading…" });
    this.reqRaw = h("pre", { "data-testid": "request-raw", class: "text json", tabindex: "0", "aria-label": "the request as JSON", hidden: true });
    this.reqNote = h("span", { class: "muted" });
    const copied = h("span", { class: "muted", "aria-live": "polite" });
    const raw = h("button", { type: "button", class: "small", "data-testid": "request-raw-toggle", "aria-pressed": "false", text: "raw JSON",
      onclick: () => {
        const on = this.reqRaw.hidden;
        this.reqRaw.hidden = !on;
        this.reqView.hidden = on;
        raw.setAttribute("aria-pressed", String(on));
      } });
    return h("section", { class: "block req", "aria-labelledby": "req-title" },
      h("div", { class: "sec-head" },
        h("h3", { id: "req-title", text: "Request" }),
        h("label", {}, "wire ",
          h("select", { "data-testid": "wire-select", onchange: (e) => { this.wire = e.target.value; this.loadRequest(); } },
            wires.map((w) => h("option", { value: w, selected: w === this.wire, text: w === d.wire ? `${w} (as sent)` : w })))),
        raw,
        h("button", { type: "button", class: "small", "data-testid": "request-copy", text: "copy JSON", onclick: () => copy(this.reqJSON, this.reqRaw, copied) }),
        copied, this.reqNote),
      this.reqView, this.reqRaw);
  }

  async loadRequest() {
    const n = this.n;
    const wire = this.wire;
    const view = this.reqView;
    try {
      const r = await api.request(n, wire);
      if (view !== this.reqView || wire !== this.wire) return;
      this.reqJSON = JSON.stringify(r.body, null, 2);
      this.reqRaw.textContent = this.reqJSON;
      view.replaceChildren(jsonView(r.body));
      view.dataset.ready = "true";
      this.reqNote.textContent = r.as_sent ? "as sent" : `translated to ${r.wire} (not what was sent)`;
    } catch (err) {
      if (view === this.reqView) view.textContent = `could not load the request: ${err.message}`;
    }
  }

  /** One of our calls whose request cannot be rebuilt (its texts missing or altered on the way). */
  renderUnrebuilt(d) {
    return h("article", { "data-testid": "call", "data-index": d.index, class: "call" },
      this.header(d),
      h("div", { "data-testid": "unrebuilt", class: "banner warn-banner", role: "note" },
        h("strong", { text: "cannot be rebuilt" }),
        h("span", { text: ` — ${d.reason}. The cache simulation and the chart skip this call.` })),
      this.cachePane(d));
  }

  // ---- calls another instrumentation traced ------------------------------------------------

  renderForeign(d) {
    const byRole = (title, items) => h("section", { class: "block" }, h("h3", { text: title }),
      items.length ? items.map((m) => h("div", { class: `msg role-${m.role}` }, h("div", { class: "role", text: m.role }), h("pre", { class: "text", text: asText(m.content) })))
        : h("p", { class: "muted", text: "none" }));
    return h("article", { "data-testid": "call", "data-index": d.index, class: "call" },
      this.header(d),
      h("div", { "data-testid": "reconstructed", class: "banner warn-banner", role: "note" },
        h("strong", { text: "reconstructed from the span, not verified" }),
        h("span", { text: ` — another instrumentation traced this call; what follows is read from its span${d.source ? ` (${d.source})` : ""}, not rebuilt from callctx's own record.` })),
      this.cachePane(d),
      h("section", { class: "block" }, h("h3", { text: `System: ${(d.system || []).length}` }),
        (d.system || []).map((t) => h("pre", { class: "text", text: asText(t) }))),
      (d.tools || []).length ? h("section", { class: "block", "data-testid": "foreign-tools" }, h("h3", { text: `Tools: ${d.tools.length}` }),
        d.tools.map((t) => h("div", { class: "msg" }, h("div", { class: "role", text: t.name }),
          h("pre", { class: "text", text: [t.description, t.parameters].filter(Boolean).join("\n") })))) : null,
      byRole(`Messages: ${(d.messages || []).length}`, d.messages || []),
      byRole("Output", d.output || []),
      this.diff(d),
    );
  }

  // ---- the prompt cache --------------------------------------------------------------------

  /** What the provider reported beside what its rules made possible, and why it read less. */
  cachePane(d) {
    const c = d.cache;
    if (!c) return null;
    if (c.pending) {
      // the ledger is still catching up with the log: ask again shortly
      const n = d.index, token = this.token;
      setTimeout(() => { if (this.token === token && this.n === n) this.show(n, this.provider, { keep: true }); }, PENDING_RETRY_MS);
      return h("section", { class: "block cache-pane", "data-testid": "cache", "data-reason": "", "aria-busy": "true" },
        h("h3", { text: "Prompt cache" }),
        h("p", { class: "muted", text: `simulating the provider's cache over the log: ${fmtInt(c.ready)} of ${fmtInt(c.calls)} calls so far…` }));
    }
    const rep = c.reported;
    const p = c.possible || {};
    const link = (n) => h("a", { href: `/ui/calls/${n}`, onclick: (e) => { e.preventDefault(); this.onCall(n); }, text: `call ${n}` });
    const said = rep
      ? `read ${fmtInt(rep.cache_read ?? 0)} · written ${fmtInt(rep.cache_write ?? 0)}` + (rep.input !== undefined ? ` · input ${fmtInt(rep.input)}` : "")
      : "not reported";
    const simulated = c.reason === "unknown"
      ? "nothing to simulate"
      : `read ${fmtInt(p.cache_read)} · written ${fmtInt(p.cache_write)} of ${fmtInt(p.tokens)}` + (p.limit ? ` (any cache could serve ${fmtInt(p.limit)})` : "");
    return h("section", { class: "block cache-pane", "data-testid": "cache", "data-reason": c.reason, "aria-labelledby": "cache-title" },
      h("h3", { id: "cache-title", text: "Prompt cache" }),
      h("p", {}, h("span", { class: `badge reason reason-${c.reason}`, "data-testid": "cache-reason", text: c.reason }), " ", h("span", { "data-testid": "cache-sentence", text: c.sentence })),
      h("dl", { class: "meta" },
        meta("reported by the provider", h("span", { "data-testid": "cache-reported", text: said })),
        meta(`simulated (${c.rules}${c.model ? `, ${c.model}` : ""})`, h("span", { "data-testid": "cache-simulated", text: simulated })),
        c.compared_with !== null && c.compared_with !== undefined
          ? meta("compared with", link(c.compared_with), c.gap_seconds !== null && c.gap_seconds !== undefined ? ` · ${fmtInt(Math.round(c.gap_seconds))} s earlier` : "")
          : null,
        c.lost_tokens ? meta("lost", `${fmtInt(c.lost_tokens)} tokens sent again`, c.lost_usd !== null && c.lost_usd !== undefined ? ` · ${fmtCost(c.lost_usd)}` : "") : null,
      ),
      (c.warnings || []).length ? h("ul", { class: "problems", role: "note" }, c.warnings.map((w) => h("li", { text: w }))) : null,
    );
  }
}

const PENDING_RETRY_MS = 1000;
const PART_NAMES = { tools: "tool", system: "system text", messages: "message" };

// ---- helpers ---------------------------------------------------------------------------------

function meta(term, ...value) {
  return h("div", {}, h("dt", { text: term }), h("dd", {}, ...value));
}

function asText(v) {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}

/** For a collapsed call tree: where the call sits ("seed_surveys · status: running  # you are here"). */
function herePreview(text) {
  const at = text.indexOf(HERE);
  if (at < 0) return null;
  const lines = text.slice(0, text.indexOf("\n", at) < 0 ? text.length : text.indexOf("\n", at)).split("\n");
  const here = lines.pop().trim();
  const fn = lines.reverse().map((l) => /^\s*-\s*function:\s*(.+)$/.exec(l)).find(Boolean);
  return h("span", { class: "here-preview" }, h("mark", { class: "here", text: fn ? `${fn[1]} · ${here}` : here }));
}

/** The text as nodes, the "# you are here" line wrapped in <mark>. */
function textWithHere(text) {
  const at = text.indexOf(HERE);
  if (at < 0) return text;
  const start = text.lastIndexOf("\n", at) + 1;
  let end = text.indexOf("\n", at);
  if (end < 0) end = text.length;
  return [text.slice(0, start), h("mark", { class: "here", text: text.slice(start, end) }), text.slice(end)];
}

/** before/after as nodes with the part that differs marked (common prefix and suffix left plain). */
function excerpts(a, b) {
  let p = 0;
  while (p < a.length && p < b.length && a[p] === b[p]) p++;
  let s = 0;
  while (s < a.length - p && s < b.length - p && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;
  const part = (t) => [t.slice(0, p), h("mark", { class: "chg" + (t.length - s - p ? "" : " empty"), text: t.slice(p, t.length - s) }), t.slice(t.length - s)];
  return [part(a), part(b)];
}

/** Put `text` on the clipboard; where the browser refuses, show and select `pre` (which holds it). */
async function copy(text, pre, note) {
  if (text === null || text === undefined) return;
  try {
    await navigator.clipboard.writeText(text);
    note.textContent = "copied";
  } catch {
    pre.hidden = false;
    const range = document.createRange();
    range.selectNodeContents(pre);
    const sel = getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    note.textContent = document.execCommand && document.execCommand("copy") ? "copied" : "selected: press Ctrl+C";
  }
  setTimeout(() => (note.textContent = ""), 2000);
}

/** A span's input or output: JSON as a view (multi-line strings as text), anything else as text. */
function ioText(text, mime) {
  const value = (!mime || mime.includes("json")) ? parsedJSON(text) : undefined;
  if (value !== undefined) return h("div", { class: "text json jv-wrap" }, jsonView(value));
  return h("pre", { class: "text" }, text);
}
