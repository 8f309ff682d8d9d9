// app.js: the page's entry point (an ES module, no dependencies). It wires the panes together:
//   - left: filters (from /ui/api/facets) and the virtualised list of sessions/traces;
//   - middle: the selected tree's header, chart, call tree and virtualised calls list;
//   - right: the selected call, or the selected span of the tree with its io (detail.js);
// and owns the URL (/ui, /ui/traces/{id}, /ui/calls/{n}[?provider=][#seg-I], /ui/spans/{id}:
// pushState on navigation, popstate restores) and the live loop (poll /ui/api/state every
// 500 ms, refresh what is on screen when `generation` changes; while the log or table does
// not exist yet, say so instead of "live").

import { api, h, setChildren, onUnauthorized, fmtInt, fmtCost, fmtMs, fmtTime, fmtWhen, shortId, tokensOf, statusBadge, BASE } from "./api.js";
import { VirtualList } from "./virtual.js";
import { CallTree, Chart } from "./tree.js";
import { CallDetail } from "./detail.js";

const $ = (id) => document.getElementById(id);
const POLL_MS = 500;

const state = {
  treeId: null,
  call: null, // the selected call number
  span: null, // or the selected span (not a model call)
  path: [], // its span path
  provider: null, // ?provider=
  filters: { service: "", function: "", status: "" },
  facets: { services: [], functions: [], providers: [], wires: [] }, // from /ui/api/facets: the server's provider table
  generation: null,
  treeRow: null, // the selected tree's row from /ui/api/trees, when known
};

// ---- the panes -------------------------------------------------------------------------------

const trees = new VirtualList({
  root: $("trees"),
  rowHeight: 48,
  pageSize: 200,
  empty: "no sessions or traces (yet)",
  fetchPage: (offset, limit) =>
    api.trees(state.filters, offset, limit).then((r) => {
      const row = state.treeId && r.trees.find((t) => t.id === state.treeId);
      if (row) {
        state.treeRow = row; // the open tree's summary, for its header
        renderTreeHead();
      }
      return { total: r.total, items: r.trees };
    }),
  renderRow: renderTreeRow,
  onActivate: (t) => {
    state.treeRow = t;
    navigate(treeUrl(t.id));
  },
  isSelected: (t) => t.id === state.treeId,
  onTotal: (n) => ($("trees-count").textContent = fmtInt(n)),
});

const calls = new VirtualList({
  root: $("calls"),
  rowHeight: 28,
  // one line where the pane is wide, two where it is narrow (app.css sets --row-h by the pane's width)
  rowHeightFor: (root) => parseFloat(getComputedStyle(root).getPropertyValue("--row-h")) || 28,
  pageSize: 500,
  empty: "no model calls in this tree",
  fetchPage: (offset, limit) => api.calls(state.treeId, offset, limit).then((r) => ({ total: r.total, items: r.calls })),
  renderRow: renderCallRow,
  onActivate: (c) => navigate(callUrl(c.index)),
  isSelected: (c) => c.index === state.call,
  onTotal: (n) => ($("calls-count").textContent = fmtInt(n)),
});

const tree = new CallTree($("tree"), { onCall: (n) => navigate(callUrl(n)), onSpan: (id) => navigate(spanUrl(id)) });
const chart = new Chart($("chart"), { onSelect: (n) => navigate(callUrl(n)) });
let facetsLoaded = null; // the first /ui/api/facets: the detail pane waits for its provider and wire lists
const detail = new CallDetail($("detail"), {
  facets: () => state.facets,
  facetsLoaded: () => facetsLoaded,
  onProvider: setProvider,
  onCall: (n) => navigate(callUrl(n)),
});

// A row whose page has not arrived yet: no test id, no data, an ellipsis.
function placeholder(row, dataAttribute) {
  row.removeAttribute("data-testid");
  row.removeAttribute(dataAttribute);
  row.replaceChildren(h("span", { class: "muted", text: "…" }));
}

function renderTreeRow(row, t) {
  if (!t) return placeholder(row, "data-id");
  row.setAttribute("data-testid", "tree-row");
  row.dataset.id = t.id;
  row.title = [`${t.kind} ${t.id}`, (t.functions || []).join(", ")].filter(Boolean).join(" · ");
  setChildren(row,
    h("div", { class: "l1" },
      statusBadge(t.status),
      h("span", { class: "id mono", text: shortId(t.id) }),
      h("span", { class: "muted", text: t.kind }),
      h("span", { class: "time muted", text: fmtWhen(t.start_ns), title: fmtTime(t.start_ns) })),
    h("div", { class: "l2" },
      h("span", { text: `${fmtInt(t.calls)} calls` }),
      h("span", { text: `${fmtInt(tokensOf(t.usage))} tok` }),
      h("span", { text: fmtCost(t.cost) }),
      h("span", { class: "fn muted", text: (t.functions || []).join(", ") || (t.services || []).join(", ") })),
  );
}

function renderCallRow(row, c) {
  if (!c) return placeholder(row, "data-index");
  row.setAttribute("data-testid", "call-row");
  row.dataset.index = String(c.index);
  row.title = [c.call_path || c.function || "turn", c.excerpt ? `(${c.excerpt})` : "", c.model ? `· ${c.model}` : ""].filter(Boolean).join(" ");
  setChildren(row,
    h("span", { class: "n mono", text: `#${c.index}` }),
    h("span", { class: "fn", text: c.function || "—" }),
    h("span", { class: "ex", "data-testid": "call-excerpt", text: c.excerpt || "" }),
    h("span", { class: "brk", "aria-hidden": "true" }),
    h("span", { class: "model muted", text: c.model || "" }),
    c.reconstructed ? h("span", { class: "badge recon", text: "span", title: "reconstructed from another instrumentation's span" }) : null,
    statusBadge(c.status),
    h("span", { class: "m", text: `${fmtInt(tokensOf(c.usage))} tok` }),
    h("span", { class: "m", text: fmtCost(c.cost) }),
    h("span", { class: "m", text: fmtMs(c.latency_ms) }),
  );
}

function renderTreeHead() {
  const head = $("tree-head");
  if (!state.treeId) {
    head.replaceChildren(h("h2", { text: "No tree selected" }), h("p", { class: "muted", text: "Pick a session or trace on the left." }));
    return;
  }
  const t = state.treeRow && state.treeRow.id === state.treeId ? state.treeRow : null;
  setChildren(head,
    h("h2", { title: state.treeId }, h("span", { class: "muted", text: t ? `${t.kind} ` : "tree " }), h("span", { class: "mono", text: state.treeId })),
    t ? h("p", { class: "summary" },
      statusBadge(t.status),
      ` ${fmtInt(t.calls)} calls · ${fmtInt(t.spans)} spans · ${fmtInt(tokensOf(t.usage))} tokens · ${fmtCost(t.cost)} from reported usage · ${fmtTime(t.start_ns)}`,
      t.services && t.services.length ? h("span", { class: "muted", text: ` · ${t.services.join(", ")}` }) : null) : null,
  );
}

// ---- filters ---------------------------------------------------------------------------------

async function loadFacets() {
  const f = await api.facets();
  state.facets = { ...state.facets, ...f };
  fillSelect($("f-service"), f.services || [], "all services");
  fillSelect($("f-function"), f.functions || [], "all functions");
}

function fillSelect(select, values, allLabel) {
  const want = ["", ...values];
  const have = [...select.options].map((o) => o.value);
  if (want.length === have.length && want.every((v, i) => v === have[i])) return;
  const current = select.value;
  select.replaceChildren(...want.map((v) => h("option", { value: v, text: v || allLabel })));
  select.value = want.includes(current) ? current : "";
}

for (const key of ["service", "function", "status"]) {
  $(`f-${key}`).addEventListener("change", (e) => {
    state.filters[key] = e.target.value;
    trees.reset();
  });
}

// ---- URL and navigation ----------------------------------------------------------------------

const query = () => (state.provider ? `?provider=${encodeURIComponent(state.provider)}` : "");
const callUrl = (n) => `${BASE}/calls/${n}${query()}`;
const spanUrl = (id) => `${BASE}/spans/${encodeURIComponent(id)}${query()}`;
const treeUrl = (id) => `${BASE}/traces/${encodeURIComponent(id)}${query()}`;

function parseRoute() {
  const path = location.pathname.replace(/\/+$/, "");
  let m = /\/calls\/(\d+)$/.exec(path);
  if (m) return { call: Number(m[1]) };
  m = /\/traces\/([^/]+)$/.exec(path);
  if (m) return { tree: decodeURIComponent(m[1]) };
  m = /\/spans\/([^/]+)$/.exec(path);
  if (m) return { span: decodeURIComponent(m[1]) };
  return {};
}

function navigate(url) {
  if (url !== location.pathname + location.search) history.pushState(null, "", url);
  route();
}

let routeToken = 0;
async function route() {
  const token = ++routeToken;
  state.provider = new URLSearchParams(location.search).get("provider") || null;
  const r = parseRoute();
  if (r.call) {
    if (r.call === state.call && detail.n === r.call && detail.provider === state.provider && detail.detail) {
      detail.applyHash(); // only the fragment changed
      return;
    }
    state.call = r.call;
    state.span = null;
    calls.rerender();
    const d = await detail.show(r.call, state.provider);
    if (token !== routeToken || !d) return;
    state.path = d.path || [];
    if (d.tree) await selectTree(d.tree);
    if (token !== routeToken) return;
    tree.showPath(state.path);
    chart.setSelected(r.call);
    calls.rerender();
    const at = calls.find((c) => c.index === r.call);
    if (at) calls.scrollToIndex(at[0]);
  } else if (r.span) {
    if (r.span === state.span && detail.spanId === r.span && detail.detail) return;
    state.call = null;
    state.span = r.span;
    calls.rerender();
    const d = await detail.showSpan(r.span);
    if (token !== routeToken || !d) return;
    state.path = d.path || [];
    if (d.tree) await selectTree(d.tree);
    if (token !== routeToken) return;
    tree.showPath(state.path);
    chart.setSelected(undefined);
  } else {
    state.call = null;
    state.span = null;
    state.path = [];
    detail.clear();
    if (r.tree) await selectTree(r.tree);
    else selectTree(null);
    tree.showPath([]);
    chart.setSelected(undefined);
    calls.rerender();
  }
  trees.rerender();
}

/** Show tree `id` in the middle pane (nothing when it is already shown). */
async function selectTree(id) {
  if (id === state.treeId) return state.callsReady;
  state.treeId = id;
  if (!state.treeRow || state.treeRow.id !== id) state.treeRow = id ? (trees.find((t) => t.id === id) || [])[1] || null : null;
  renderTreeHead();
  trees.rerender();
  document.body.classList.toggle("has-tree", !!id);
  if (!id) {
    tree.clear();
    chart.clear();
    calls.clear();
    $("calls-count").textContent = "";
    state.callsReady = Promise.resolve();
    return state.callsReady;
  }
  tree.open(id);
  chart.load(id, state.provider).catch(() => chart.clear());
  state.callsReady = calls.reset();
  return state.callsReady;
}

function setProvider(p) {
  state.provider = p || null;
  history.replaceState(history.state, "", location.pathname + query() + location.hash);
  if (state.call) detail.show(state.call, state.provider);
  if (state.treeId) chart.load(state.treeId, state.provider).catch(() => {});
}

window.addEventListener("popstate", route);
window.addEventListener("hashchange", () => detail.applyHash());

// ---- live ------------------------------------------------------------------------------------

/** The badge top right: "live", "waiting" (nothing to read yet) or "down". */
function setLive(text, how) {
  const el = $("live");
  if (el.textContent !== text) el.textContent = text;
  el.classList.toggle("down", how === "down");
  el.classList.toggle("waiting", how === "waiting");
}

/** While the source does not exist yet, say so plainly (a mistyped path shows here). */
function setMissing(s) {
  const notice = $("notice");
  const text = s && !s.exists
    ? s.kind === "table"
      ? `Nothing in ${s.source} yet: no spans have arrived. The page fills in as they do.`
      : `The log at ${s.source} does not exist yet. The page waits for it and fills in once something writes it; if you expected a log there, check the path.`
    : "";
  if (notice.textContent !== text) notice.textContent = text;
  notice.hidden = !text;
}

async function refreshAll() {
  await Promise.allSettled([
    loadFacets(),
    trees.refresh(),
    state.treeId ? tree.refresh().then(() => {
      const sel = state.path.length && tree.nodes.get(state.path[state.path.length - 1]);
      if (state.call && !(sel && sel.el.isConnected)) tree.showPath(state.path); // its node may have arrived
    }) : null,
    state.treeId ? calls.refresh() : null,
    state.treeId ? chart.refresh() : null,
    detail.refreshIfRunning(),
  ]);
}

async function poll() {
  try {
    const s = await api.state();
    if (s.exists) setLive(`live · ${fmtInt(s.calls)} calls`, "live");
    else setLive(s.kind === "table" ? "waiting: no spans yet" : "waiting: no log yet", "waiting");
    setMissing(s);
    $("source").textContent = s.source || "";
    const changed = state.generation !== null && s.generation !== state.generation;
    state.generation = s.generation;
    if (changed) await refreshAll();
  } catch (err) {
    setLive(err.status === 401 ? "not authorized" : "disconnected, retrying", "down");
  }
  setTimeout(poll, POLL_MS);
}

onUnauthorized(() => {
  const banner = $("banner");
  banner.textContent = "not authorized: open /ui?token=… (the token `callctx serve` printed)";
  banner.hidden = false;
});

// ---- start -----------------------------------------------------------------------------------

renderTreeHead();
facetsLoaded = loadFacets().catch(() => {});
trees.reset();
route();
poll();
