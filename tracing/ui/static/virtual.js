// virtual.js: VirtualList, a scrolling list of fixed-height rows that keeps only the visible
// rows (plus an overscan) in the DOM and fetches its items from the server a page at a time,
// on demand. Used for the list of trees and for a tree's calls (10,000 rows stay responsive).
//
// The list owns: a spacer as tall as all rows, absolutely placed row elements (reused while
// they stay in view), keyboard moves (Up/Down/PageUp/PageDown/Home/End, Enter/Space to
// activate) with a roving tabindex, and a page cache that `refresh()` marks stale and refetches
// for the visible range only (scroll position, focus and selection are kept).

export class VirtualList {
  /**
   * @param {object} o
   * @param {HTMLElement} o.root      the scroll container (gets role=listbox)
   * @param {number} o.rowHeight      px, the same for every row
   * @param {(root:HTMLElement) => number} [o.rowHeightFor]  the row height at the list's present width
   *                                  (asked again when it resizes: rows may take two lines when narrow)
   * @param {number} o.pageSize       items per request
   * @param {(offset:number, limit:number) => Promise<{total:number, items:any[]}>} o.fetchPage
   * @param {(row:HTMLElement, item:any|null, index:number) => void} o.renderRow  fills a row (item null: not loaded yet)
   * @param {(item:any, index:number) => void} o.onActivate  click, Enter or Space on a row
   * @param {(item:any) => boolean} [o.isSelected]
   * @param {string} [o.empty]        text shown when there are no items
   */
  constructor(o) {
    Object.assign(this, { overscan: 10, empty: "nothing here", isSelected: () => false, onTotal: () => {} }, o);
    this.total = 0;
    this.loaded = false;
    this.error = "";
    this.pages = new Map(); // page number -> {items, stale, loading}
    this.rows = new Map(); // index -> row element in the DOM
    this.focusIndex = 0;
    this.epoch = 0; // bumps on reset: answers for an older epoch are dropped
    this.root.classList.add("vlist");
    this.root.setAttribute("role", "listbox");
    this.spacer = document.createElement("div");
    this.spacer.className = "vspacer";
    this.note = document.createElement("p");
    this.note.className = "vnote";
    this.root.replaceChildren(this.spacer, this.note);
    this.root.addEventListener("scroll", () => this.schedule(), { passive: true });
    this.root.addEventListener("keydown", (e) => this.onKey(e));
    this.root.addEventListener("click", (e) => {
      const row = e.target.closest(".vrow");
      if (row && this.root.contains(row)) this.activate(Number(row.dataset.vi), row);
    });
    new ResizeObserver(() => {
      this.resize();
      this.schedule();
    }).observe(this.root);
  }

  /** The row height asked again (the list's width changed): rows placed anew, the same row on top. */
  resize() {
    if (!this.rowHeightFor) return;
    const height = this.rowHeightFor(this.root);
    if (!(height > 0) || height === this.rowHeight) return;
    const top = Math.floor(this.root.scrollTop / this.rowHeight);
    this.rowHeight = height;
    for (const [i, row] of this.rows) {
      row.style.top = `${i * height}px`;
      row.style.height = `${height}px`;
    }
    this.spacer.style.height = `${this.total * height}px`;
    this.root.scrollTop = top * height;
    this.render();
  }

  /** Forget everything (new filter, other tree) and load from the top. */
  reset() {
    this.clear();
    this.loaded = false;
    this.render();
    return this.ensure([0]);
  }

  /** Empty the list (nothing to show). */
  clear() {
    this.epoch++;
    this.pages.clear();
    for (const row of this.rows.values()) row.remove();
    this.rows.clear();
    this.total = 0;
    this.focusIndex = 0;
    this.loaded = true;
    this.error = "";
    this.root.scrollTop = 0;
    this.render();
  }

  /** New data on the server: refetch the visible pages (others on demand), keep the rest. */
  refresh() {
    for (const p of this.pages.values()) p.stale = true;
    const [first, last] = this.range();
    return this.ensure(this.pagesFor(first, Math.max(first, last - 1)));
  }

  /** Re-render rows in place (the selection changed). */
  rerender() {
    for (const [i, row] of this.rows) this.fill(row, i);
  }

  /** The loaded item matching `pred`, as [index, item], or null. */
  find(pred) {
    for (const [p, page] of this.pages) {
      const k = page.items ? page.items.findIndex(pred) : -1;
      if (k >= 0) return [p * this.pageSize + k, page.items[k]];
    }
    return null;
  }

  /** Scroll so that row `i` is in view (no move when it already is). */
  scrollToIndex(i) {
    const top = i * this.rowHeight;
    const view = this.root.clientHeight;
    if (top < this.root.scrollTop) this.root.scrollTop = top;
    else if (top + this.rowHeight > this.root.scrollTop + view) this.root.scrollTop = top + this.rowHeight - view;
    this.render();
  }

  item(i) {
    const page = this.pages.get(Math.floor(i / this.pageSize));
    return page && page.items ? page.items[i % this.pageSize] ?? null : null;
  }

  // ---- internals --------------------------------------------------------------------------

  range() {
    const first = Math.max(0, Math.floor(this.root.scrollTop / this.rowHeight) - this.overscan);
    const visible = Math.ceil(this.root.clientHeight / this.rowHeight) + 1;
    const last = Math.min(this.total, first + visible + 2 * this.overscan);
    return [first, last];
  }

  pagesFor(first, last) {
    const out = [];
    for (let p = Math.floor(first / this.pageSize); p <= Math.floor(last / this.pageSize); p++) out.push(p);
    return out;
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
      // fetch what came into view once scrolling settles, not for every page flown over
      clearTimeout(this.fetchTimer);
      this.fetchTimer = setTimeout(() => {
        const [first, last] = this.range();
        if (last > first) this.ensure(this.pagesFor(first, last - 1));
      }, 60);
    });
  }

  /** Fetch the given pages when missing or stale; resolves when all answered. */
  ensure(pageNumbers) {
    const epoch = this.epoch;
    const jobs = [];
    for (const p of pageNumbers) {
      const page = this.pages.get(p) || { items: null, stale: true, loading: null };
      this.pages.set(p, page);
      if (!page.stale || page.loading) {
        if (page.loading) jobs.push(page.loading);
        continue;
      }
      page.loading = this.fetchPage(p * this.pageSize, this.pageSize)
        .then(({ total, items }) => {
          if (epoch !== this.epoch) return;
          Object.assign(page, { items, stale: false, loading: null });
          this.error = "";
          this.setTotal(total);
        })
        .catch((err) => {
          page.loading = null;
          if (epoch === this.epoch && !page.items) this.error = `could not load: ${err.message}`;
        });
      jobs.push(page.loading);
    }
    return Promise.all(jobs).then(() => {
      if (epoch === this.epoch) this.render();
    });
  }

  setTotal(total) {
    this.loaded = true;
    if (total !== this.total) {
      this.total = total;
      // pages past the end are gone
      for (const p of this.pages.keys()) if (p * this.pageSize >= total && p > 0) this.pages.delete(p);
    }
    this.onTotal(total);
  }

  render() {
    this.spacer.style.height = `${this.total * this.rowHeight}px`;
    this.note.textContent = this.error || (!this.loaded ? "loading…" : this.total === 0 ? this.empty : "");
    this.note.hidden = !this.note.textContent;
    if (this.focusIndex >= this.total) this.focusIndex = Math.max(0, this.total - 1);
    const [first, last] = this.range();
    const hadFocus = this.root.contains(document.activeElement) && document.activeElement !== this.root;
    for (const [i, row] of this.rows) {
      if (i < first || i >= last) {
        row.remove();
        this.rows.delete(i);
      }
    }
    for (let i = first; i < last; i++) {
      let row = this.rows.get(i);
      if (!row) {
        row = document.createElement("div");
        row.className = "vrow";
        row.setAttribute("role", "option");
        row.dataset.vi = String(i);
        row.style.top = `${i * this.rowHeight}px`;
        row.style.height = `${this.rowHeight}px`;
        this.rows.set(i, row);
        this.spacer.append(row);
      }
      this.fill(row, i);
    }
    this.updateTabStops();
    if (hadFocus && !this.root.contains(document.activeElement)) {
      const row = this.rows.get(this.focusIndex);
      if (row) row.focus({ preventScroll: true });
    }
  }

  fill(row, i) {
    const item = this.item(i);
    const sel = item ? this.isSelected(item) : false;
    if (row._item === item && row._sel === sel) return;
    const key = item ? JSON.stringify(item) : null;
    if (row._sel !== sel) row.setAttribute("aria-selected", String(sel));
    row._item = item;
    row._sel = sel;
    if (row._key === key && key !== null) return; // same data from a refresh: keep the row's nodes
    row._key = key;
    row.classList.toggle("placeholder", !item);
    this.renderRow(row, item, i);
  }

  updateTabStops() {
    const target = this.rows.has(this.focusIndex) ? this.focusIndex : Math.min(...this.rows.keys());
    for (const [i, row] of this.rows) row.tabIndex = i === target ? 0 : -1;
  }

  activate(i, row) {
    this.focusIndex = i;
    this.updateTabStops();
    if (row) row.focus({ preventScroll: true });
    const item = this.item(i);
    if (item) this.onActivate(item, i);
  }

  moveFocus(i) {
    if (!this.total) return;
    i = Math.max(0, Math.min(this.total - 1, i));
    this.focusIndex = i;
    this.scrollToIndex(i);
    const row = this.rows.get(i);
    if (row) row.focus({ preventScroll: true });
    this.schedule();
  }

  onKey(e) {
    const rowEl = e.target.closest && e.target.closest(".vrow");
    const page = Math.max(1, Math.floor(this.root.clientHeight / this.rowHeight) - 1);
    const at = rowEl ? Number(rowEl.dataset.vi) : this.focusIndex;
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, PageDown: at + page, PageUp: at - page, Home: 0, End: this.total - 1 };
    if (e.key in moves) {
      e.preventDefault();
      this.moveFocus(moves[e.key]);
    } else if ((e.key === "Enter" || e.key === " ") && rowEl) {
      e.preventDefault();
      this.activate(at, rowEl);
    }
  }
}
