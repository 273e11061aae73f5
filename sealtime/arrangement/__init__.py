"""Arrangements: keyed, hash-partitioned operator state kept as sorted Arrow runs.

See docs/arrangements.md for the design (problem, decision, alternatives, numbers).
"""
