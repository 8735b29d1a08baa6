"""share.analysis: a parsed profile -> the views people read, as `go tool pprof` computes them.

Semantics are Go 1.19's vendored google/pprof, whose internal/ packages are the model: one
folder an idea, each importing only the folders before it in this list (tests/test_layout.py
checks the order and that no import, in a function or under TYPE_CHECKING, closes a cycle):

- measure/  pprof's numbers and text: unit scaling, percentages, the -top layout (units, text).
- model/    the decoded profile: Tables (flat numpy arrays, names demangled), Stacks (every
            sample's frames, drop_frames applied), Graph (flat, cum, total per sample type),
            labels, the kind of profile, Go's regexp (RE2) and exact grouping keys.
- refine/   pprof's options and filters: the query string, focus/ignore/hide/show, the tag
            filters, tagroot/tagleaf, granularity, in applyFocus's order -> a refined Graph.
- flame/    the flame graph: the call tree (tree, trie), its JSON, zoom into a subtree.
- combine/  profiles combined as pprof combines them: Prof, Merge, scaling, -diff_base, encode.
- reports/  pprof's reports on one (refined) graph: top, peek, tags, call graph and dot, the
            summary and search.
- views/    each view encoded as served, one registry (views.VIEWS, render) for the compute tier
            and the CLI: options per view, the diff views, the preview image.

It imports share.pprof (and share.errors) only: never the stores, the core or the web.
"""
