"""``callctx cache``: a provider's prompt cache simulated over a log's recorded calls, and its chart."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO, cast

from callctx.components import providers
from callctx.store.model import Filter, Store

from .common import EXIT_OK, CliError, add_source, every_call, open_source, source_name
from .read import rebuilt


def cmd_cache(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.why:
        return cmd_why(args, out, err)
    with open_source(args, err) as store:
        return _simulate(args, store, out, err)


def cmd_why(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``callctx cache LOG --why``: the cache ledger, a line per call, then the causes."""
    from callctx.components import cache
    from callctx.store.ledger import LedgerView, entry_json

    if args.ttl is not None and not args.ttl > 0:
        raise CliError("--ttl must be a positive number of seconds")
    try:
        rules = cache.load_rules(args.rules) if args.rules else None
    except (OSError, ValueError) as problem:
        raise CliError(f"cannot read cache rules {args.rules}: {problem}") from None
    with open_source(args, err) as store:
        if not store.state().calls:
            raise CliError(f"{source_name(args)} records no model calls")
        entries = LedgerView(store, rules, ttl=args.ttl).entries()
    if args.json:
        for e in entries:
            out.write(json.dumps(entry_json(e), ensure_ascii=False) + "\n")
        return EXIT_OK
    head = f"{'#':>4}  {'function':<20} {'reported':>17} {'possible':>9}  {'reason':<15} first difference"
    out.write(head + "\n")
    for e in entries:
        rep = e.reported
        reported = "-" if rep is None or rep.cache_read is None else f"{rep.cache_read:,}r/{rep.cache_write or 0:,}w"
        diff = e.first_difference
        where = f"{diff.part}[{diff.index}] at {diff.offset}" if diff is not None else ""
        against = f" (vs #{e.compared_with})" if e.compared_with is not None and diff is not None else ""
        name = (e.function or "turn")[:20]
        possible = e.possible.cache_read
        out.write(f"{e.call:>4}  {name:<20} {reported:>17} {possible:>9,}  {e.reason:<15} {where}{against}\n")
    out.write("\nreported: the provider's usage (cache read r / written w); possible: its rules, simulated\n")
    causes: dict[tuple[str | None, str | None, str], list[float]] = {}
    for e in entries:
        if e.reason in ("hit", "first"):
            continue
        c = causes.setdefault((e.service, e.function, e.reason), [0, 0, 0.0])
        c[0] += 1
        c[1] += e.lost_tokens
        c[2] += e.lost_usd or 0.0
    if causes:
        out.write("\ntop causes (service, agent, reason: calls, tokens lost, $ lost):\n")
        for (service, function, reason), (n, lost, usd) in sorted(causes.items(), key=lambda kv: -kv[1][2])[:10]:
            out.write(f"  {service or '-'} · {function or 'turn'} · {reason}: {n:.0f} calls, {lost:,.0f} tokens, "
                      f"${usd:.4f}\n")  # fmt: skip
    else:
        out.write("\nno call read less than its prefix allowed\n")
    return EXIT_OK


def _simulate(args: argparse.Namespace, store: Store, out: TextIO, err: TextIO) -> int:
    from callctx.components import cache

    if not store.state().calls:
        raise CliError(f"{source_name(args)} records no model calls")
    try:
        rules = cache.load_rules(args.rules) if args.rules else None
    except (OSError, ValueError) as e:
        raise CliError(f"cannot read cache rules {args.rules}: {e}") from None
    provider = args.provider
    first = store.calls(limit=1).items
    model = args.model or (first[0].model if first else "") or ""
    tokenize = cache.Tokenizer()
    requests = []
    contexts = []
    calls = list(every_call(store, Filter(ours=True)))  # another instrumentation's calls were not recorded
    if not calls:
        raise CliError(f"{source_name(args)} records no model calls of callctx's own (only other instrumentations')")
    try:
        sim = cache.Simulator(provider, model, rules, key=cast("cache.Key | None", args.key))  # argparse's choices
    except (KeyError, ValueError) as e:
        raise CliError(str(e)) from None
    t0 = calls[0].start_ns
    for c in calls:
        done = rebuilt(store, c)
        context, exchanges = done.context, done.exchanges
        contexts.append(context)
        label = c.function or "turn"
        time_s = (c.start_ns - t0) / 1e9
        requests.append(
            cache.request_of(context, exchanges, time_s=time_s, label=label, tokenize=tokenize, marking=sim.marking)
        )
    try:
        report = sim.run(requests)
        other: cache.Key = "text" if sim.key == "block" else "block"
        twin = cache.Simulator(provider, model, rules, key=other).run(requests)
    except (KeyError, ValueError) as e:
        raise CliError(str(e)) from None
    for w in sim.warnings:
        err.write(f"warning: {w}\n")
    handed = f", by the {sim.row} rules" if sim.row != provider else ""
    out.write(
        f"prompt cache of {provider} ({model or 'default model'}{handed}), simulated over {len(calls)} calls, "
        f"entries keyed by {sim.key}\n"
    )
    head = f"{'#':>4}  {'function':<20} {'tokens':>8} {'read':>8} {'written':>8} {'uncached':>8} {'limit':>8}"
    out.write(f"{head}  {'cost $':>9}\n")
    for i, r in enumerate(report.calls, start=1):
        row = f"{i:>4}  {r.label:<20} {r.total:8,d} {r.read:8,d} {r.write:8,d} {r.uncached:8,d} {r.limit:8,d}"
        out.write(f"{row}  {r.cost:9.5f}\n")
    saving = 1 - report.cost / report.cost_uncached if report.cost_uncached else 0.0
    out.write(
        f"total: {report.total:,} tokens, {report.read:,} read from cache ({report.hit_share:.1%} hit share, "
        f"{report.limit_share:.1%} of the {report.limit:,}-token limit)\n"
        f"cost ${report.cost:.4f} against ${report.cost_uncached:.4f} with no caching ({saving:.0%} saved)\n"
    )
    if abs(twin.limit_share - report.limit_share) >= 0.001:
        out.write(f"keyed by {other}: {twin.limit_share:.1%} of the limit ({twin.hit_share:.1%} hit share)\n")
    blockwise, textwise = (report, twin) if sim.key == "block" else (twin, report)
    for why in cache.explain(contexts, blockwise, textwise, sim.min_tokens):
        out.write(f"why: {why}\n")
    if args.chart:
        Path(args.chart).write_text(chart_html(report), encoding="utf-8")
        out.write(f"chart: {args.chart}\n")
    return EXIT_OK


def chart_html(report: Any) -> str:
    """A self-contained HTML page: cached (read, written) and uncached tokens per call, and the limit."""
    import html

    calls = report.calls
    width, height, pad = max(600, 8 * len(calls) + 80), 320, 40
    top = max((c.total for c in calls), default=1) or 1
    bar = (width - 2 * pad) / max(1, len(calls))
    scale = (height - 2 * pad) / top
    parts = []
    for i, c in enumerate(calls):
        x = pad + i * bar
        y = height - pad
        for value, color, name in ((c.read, "#2e7d32", "read"), (c.write, "#ef6c00", "written"),
                                   (c.uncached, "#9e9e9e", "uncached")):  # fmt: skip
            h = value * scale
            y -= h
            tip = html.escape(f"call {i + 1} {c.label}: {name} {value:,}")
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(1.0, bar - 1):.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{tip}</title></rect>"
            )
        ly = height - pad - c.limit * scale
        parts.append(f'<line x1="{x:.1f}" x2="{x + bar:.1f}" y1="{ly:.1f}" y2="{ly:.1f}" stroke="#000"/>')
    title = html.escape(
        f"{report.provider} {report.model}: {report.hit_share:.1%} of tokens read from cache, "
        f"{report.limit_share:.1%} of the limit; ${report.cost:.4f} vs ${report.cost_uncached:.4f} uncached"
    )
    legend = (
        '<span style="color:#2e7d32">&#9632; read</span> <span style="color:#ef6c00">&#9632; written</span> '
        '<span style="color:#9e9e9e">&#9632; uncached</span>; the black line: the limit (what any cache could serve)'
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>callctx cache</title></head>"
        f"<body style='font-family:sans-serif'><h3>{title}</h3><p>{legend}</p>"
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>"
        f"<line x1='{pad}' x2='{width - pad}' y1='{height - pad}' y2='{height - pad}' stroke='#444'/>"
        + "".join(parts)
        + f"<text x='{pad}' y='{height - 10}' font-size='12'>calls 1 to {len(calls)}</text>"
        f"<text x='4' y='{pad - 8}' font-size='12'>{top:,} tokens</text></svg></body></html>\n"
    )


def register(sub: argparse._SubParsersAction) -> None:
    """The cache command."""
    p = sub.add_parser("cache", help="simulate a provider's prompt cache over a log's model calls")
    add_source(p)
    rows = providers.CACHE_ROWS
    p.add_argument(
        "--provider",
        default=rows[0],
        help=f"cache model from the rules table: {', '.join(rows)}, or a row of your own --rules (default: {rows[0]})",
    )
    p.add_argument("--model", help="model name for per-model rules and prices (default: the recorded one)")
    p.add_argument("--rules", help="your own cache rules table (YAML, same shape as the shipped one)")
    p.add_argument(
        "-o", "--out", "--chart", dest="chart", help="write a self-contained HTML chart of cached vs uncached tokens"
    )
    p.add_argument(
        "--key",
        choices=["text", "block"],
        help="what a hit needs: the same text, or the same blocks (default: block where the provider caches at "
        "breakpoints, text for prefix caches); the other key's share is printed when it differs",
    )
    p.add_argument("--why", action="store_true",
                   help="for every call, ours or another instrumentation's: what the provider reported, what its "
                        "rules made possible, and why it read less (the cache ledger)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="with --why: one JSON object per call")
    p.add_argument("--ttl", type=float, metavar="SECONDS",
                   help="with --why: the cache's lifetime, in place of the rules'")  # fmt: skip
    p.set_defaults(run=cmd_cache)
