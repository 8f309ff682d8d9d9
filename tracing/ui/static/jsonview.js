// jsonview.js: a JSON value as an indented view to read. Keys, numbers, literals and one-line
// strings read as JSON writes them; a string that holds line breaks reads as its text (real
// line breaks, its whitespace kept) in a block under its key, where JSON would show one long
// escaped line. The view is for reading: the JSON to copy is JSON.stringify(value, null, 2),
// which the caller keeps beside it (copy button, raw view).

import { h } from "./api.js";

/** The view of `value` (any JSON value): a <div class="jv"> of lines and text blocks. */
export function jsonView(value) {
  const out = [];
  emit(out, value, 0, undefined, "");
  return h("div", { class: "jv" }, out);
}

/** Is `text` JSON worth showing as a view (an object or an array)? Returns the value, or undefined. */
export function parsedJSON(text) {
  if (typeof text !== "string") return undefined;
  const t = text.trimStart();
  if (!t.startsWith("{") && !t.startsWith("[")) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function line(depth, ...children) {
  const el = h("div", { class: "jl" }, ...children);
  el.style.setProperty("--d", depth);
  return el;
}

function keyOf(key) {
  return key === undefined ? [] : [h("span", { class: "jk", text: JSON.stringify(key) }), ": "];
}

function emit(out, value, depth, key, comma) {
  if (value !== null && typeof value === "object") {
    const array = Array.isArray(value);
    const entries = array ? value.map((v) => [undefined, v]) : Object.entries(value);
    const [open, close] = array ? ["[", "]"] : ["{", "}"];
    if (!entries.length) {
      out.push(line(depth, ...keyOf(key), open + close + comma));
      return;
    }
    out.push(line(depth, ...keyOf(key), open));
    entries.forEach(([k, v], i) => emit(out, v, depth + 1, k, i < entries.length - 1 ? "," : ""));
    out.push(line(depth, close + comma));
  } else if (typeof value === "string" && value.includes("\n")) {
    const lines = value.split("\n").length;
    out.push(line(depth, ...keyOf(key), h("span", { class: "jml", text: `text of ${lines} lines:` })));
    const block = h("div", { class: "jblock", "data-testid": "json-text" }, value);
    block.style.setProperty("--d", depth + 1);
    out.push(block);
  } else {
    const cls = typeof value === "string" ? "js" : typeof value === "number" ? "jn" : "jb";
    out.push(line(depth, ...keyOf(key), h("span", { class: cls, text: JSON.stringify(value) }), comma));
  }
}
