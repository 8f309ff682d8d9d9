// api.js: the page's shared helpers.
//   - getJSON / api: GET the server's JSON endpoints (/ui/api/...), errors as HttpError;
//   - h(): builds DOM nodes from tag, attributes and children (text always via textContent,
//     never innerHTML: server texts hold user content that may look like HTML);
//   - fmt*: numbers with thousands separators, costs as $0.0123, durations, times, short ids.

export const BASE = "/ui";

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let unauthorized = () => {};
/** Called once per 401 answer (the page shows how to log in). */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

/** GET `path` with `params` (null/undefined/"" left out) and return the decoded JSON. */
export async function getJSON(path, params = {}, { signal } = {}) {
  const url = new URL(BASE + path, location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, String(v));
  }
  const res = await fetch(url, { signal, credentials: "same-origin", headers: { Accept: "application/json" } });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (res.status === 401) unauthorized();
  if (!res.ok) throw new HttpError(res.status, (body && body.error) || `${res.status} ${res.statusText}`);
  return body;
}

const enc = encodeURIComponent;

export const api = {
  state: () => getJSON("/api/state"),
  facets: () => getJSON("/api/facets"),
  trees: (filters, offset, limit) => getJSON("/api/trees", { ...filters, offset, limit }),
  nodes: (tree, parent, offset, limit) => getJSON(`/api/trees/${enc(tree)}/nodes`, { parent, offset, limit }),
  calls: (tree, offset, limit) => getJSON("/api/calls", { tree, offset, limit }),
  call: (n, provider) => getJSON(`/api/calls/${enc(n)}`, { provider }),
  request: (n, wire) => getJSON(`/api/calls/${enc(n)}/request`, { wire }),
  span: (id) => getJSON(`/api/spans/${enc(id)}`),
  chart: (tree, provider) => getJSON(`/api/trees/${enc(tree)}/chart`, { provider }),
};

/**
 * h("div", {class: "x", "data-testid": "y", onclick: fn, text: "..."}, child, "text", ...)
 * Keys: `text` sets textContent; `on...` adds a listener; `value`, `checked`, `hidden`,
 * `disabled`, `selected` set the property; anything else is an attribute (null/false: left out).
 * Children: nodes, strings (as text nodes), arrays, null/false (skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = tag === "svg" || SVG_TAGS.has(tag) ? document.createElementNS(SVG_NS, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") el.textContent = String(v);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (PROPS.has(k)) el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

/** Replace el's children (same child rules as h()). */
export function setChildren(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";
const SVG_TAGS = new Set(["g", "path", "rect", "line", "polyline", "text", "title", "circle"]);
const PROPS = new Set(["value", "checked", "hidden", "disabled", "selected"]);

// ---- formatting -------------------------------------------------------------------------

const intFmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const costFmt = new Intl.NumberFormat("en-US", { minimumFractionDigits: 4, maximumFractionDigits: 4 });

export const fmtInt = (n) => (n === null || n === undefined ? "—" : intFmt.format(n));
export const fmtCost = (c) => (c === null || c === undefined ? "—" : "$" + costFmt.format(c));

/** Input plus output tokens (input already counts the cached ones). */
export const tokensOf = (u) => (u ? (u.input || 0) + (u.output || 0) : 0);

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return "running…";
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${intFmt.format(Math.round(ms))} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} m ${Math.round((ms % 60000) / 1000)} s`;
}

const pad = (n) => String(n).padStart(2, "0");
/** ns since the epoch as local "MM-DD HH:MM:SS" (with the year when not this year). */
export function fmtTime(ns) {
  if (!ns) return "—";
  const d = new Date(ns / 1e6);
  const day = `${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  const year = d.getFullYear() === new Date().getFullYear() ? "" : `${d.getFullYear()}-`;
  return `${year}${day} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A compact form for lists: "HH:MM:SS" today, "MM-DD HH:MM" this year, else "YYYY-MM-DD". */
export function fmtWhen(ns) {
  if (!ns) return "—";
  const d = new Date(ns / 1e6);
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (d.getFullYear() === now.getFullYear()) return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

export const shortId = (id) => (id && id.length > 12 ? id.slice(0, 8) + "…" : id || "");

/** "in 1,234 (read 1,000 · write 0) · out 56" */
export function fmtUsage(u) {
  if (!u) return "—";
  const cached = u.cache_read || u.cache_write ? ` (read ${fmtInt(u.cache_read)} · write ${fmtInt(u.cache_write)})` : "";
  return `in ${fmtInt(u.input)}${cached} · out ${fmtInt(u.output)}`;
}

/** A small status pill; the text says it, colour only helps. */
export function statusBadge(status) {
  return h("span", { class: `status status-${status || "unknown"}`, text: status || "?" });
}
