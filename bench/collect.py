"""Assemble BENCHMARKS.md from the per-benchmark results in bench/results/*.md.

    python bench/collect.py

Each benchmark script writes its own section (with machine, date and command) to
bench/results/; this script only concatenates them in a fixed order. Notes written by
hand (earlier runs, re-checks, what a number means) live in bench/results/notes/ under
the section's name and follow their section: a script that rewrites its section never
touches them, and regenerating BENCHMARKS.md keeps them.
"""

from __future__ import annotations

from pathlib import Path

ORDER = [
    "progress",
    "windows",
    "nexmark",
    "nexmark_coverage",
    "nexmark_coverage_rerun",
    "nexmark_latency",
    "nexmark_recovery",
    "cold_start",
    "nexmark_literal",
    "tick_profile",
    "state_growth",
    "latency",
    "durability",
    "pubsub",
    "file_parts",
]


def main() -> int:
    root = Path(__file__).resolve().parents[1]
    results = root / "bench" / "results"
    names = sorted(p.stem for p in results.glob("*.md"))
    ordered = [n for n in ORDER if n in names] + [n for n in names if n not in ORDER]
    parts = [
        "# Benchmarks\n",
        "Every section is written by its script in `bench/` and names the machine, the date",
        "and the command. Regenerate a section by running its command, then",
        "`python bench/collect.py`. Notes added by hand live in `bench/results/notes/`.\n",
    ]
    for name in ordered:
        parts.append((results / f"{name}.md").read_text(encoding="utf-8").strip() + "\n")
        notes = results / "notes" / f"{name}.md"
        if notes.exists():
            parts.append(notes.read_text(encoding="utf-8").strip() + "\n")
    (root / "BENCHMARKS.md").write_text("\n".join(parts), encoding="utf-8")
    print(f"BENCHMARKS.md: {', '.join(ordered)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
