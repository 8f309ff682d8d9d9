"""Prompt-injection scanner on its corpus: detection and false-positive rates.

Prints the rates overall, per language and per category, the target (detection >= 90 %,
false positives <= 3 %), the documents the scanner gets wrong, and how long a 2 MB file takes.

    python bench/injection.py            # exits 0; the test suite holds the scanner to the target
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

import yaml

from callctx.components.injection import scan, scan_findings

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpora" / "injection"
DETECTION_TARGET = 0.90
FALSE_POSITIVE_TARGET = 0.03


def load(name: str) -> list[dict]:
    with open(CORPUS / name, encoding="utf-8") as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml when present


def table(title: str, docs: list[dict], flagged: dict[str, list[str]], rate_name: str) -> None:
    groups: dict[str, list[dict]] = defaultdict(list)
    for d in docs:
        groups[d[title]].append(d)
    print(f"  by {title}:")
    for key in sorted(groups, key=lambda k: (-len(groups[k]), k)):
        g = groups[key]
        hit = sum(1 for d in g if flagged[d["id"]])
        print(f"    {key:<16} {hit:>3}/{len(g):<3} {rate_name} {hit / len(g):6.1%}")


def main() -> int:
    attacks, benign = load("attacks.yaml"), load("benign.yaml")
    flagged = {d["id"]: scan(d["text"]) for d in attacks + benign}
    detected = sum(1 for d in attacks if flagged[d["id"]])
    false_pos = sum(1 for d in benign if flagged[d["id"]])
    det_rate, fp_rate = detected / len(attacks), false_pos / len(benign)

    print(f"prompt-injection corpus: {len(attacks)} attacks, {len(benign)} benign documents")
    print(f"detection       {detected:>3}/{len(attacks)}  {det_rate:6.1%}   target >= {DETECTION_TARGET:.0%}")
    print(f"false positives {false_pos:>3}/{len(benign)}  {fp_rate:6.1%}   target <= {FALSE_POSITIVE_TARGET:.0%}")
    ok = det_rate >= DETECTION_TARGET and fp_rate <= FALSE_POSITIVE_TARGET
    print("target met" if ok else "TARGET MISSED")

    print("\nattacks (detection rate)")
    table("lang", attacks, flagged, "detected")
    table("category", attacks, flagged, "detected")
    print("\nbenign documents (false-positive rate)")
    table("lang", benign, flagged, "flagged ")
    table("category", benign, flagged, "flagged ")

    print("\nheld out (written after the scanner, see tests/corpora/injection/README.md):")
    for tag, what in (("-x", "round 1, since used to widen the rules"), ("-y", "round 2, never used to tune")):
        a = [d for d in attacks if tag in d["id"]]
        b = [d for d in benign if tag in d["id"]]
        if a and b:
            hit = sum(1 for d in a if flagged[d["id"]])
            fp = sum(1 for d in b if flagged[d["id"]])
            print(
                f"  {what:<40} detection {hit}/{len(a)} {hit / len(a):6.1%}"
                f"   false positives {fp}/{len(b)} {fp / len(b):6.1%}"
            )

    quoted = [d for d in benign if not flagged[d["id"]] and scan_findings(d["text"])]
    print(f"\nbenign documents with only quoted-example findings: {len(quoted)}")
    misses = [d for d in attacks if not flagged[d["id"]]]
    if misses:
        print("\nmissed attacks:")
        for d in misses:
            print(f"  {d['id']:<10} {d['category']:<15} {' '.join(d['text'].split())[:90]}")
    fps = [d for d in benign if flagged[d["id"]]]
    if fps:
        print("\nfalse positives:")
        for d in fps:
            print(f"  {d['id']:<10} {d['category']:<15} {', '.join(flagged[d['id']])}")

    big = "\n\n".join(d["text"] for d in benign)
    big = (big * (2_000_000 // len(big) + 1))[:2_000_000]
    t0 = time.perf_counter()
    scan(big)
    print(f"\n2 MB of benign text scanned in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
