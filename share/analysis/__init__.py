"""share.analysis: a parsed profile -> the views people read, as `go tool pprof` computes them.

Semantics are Go 1.19's vendored google/pprof. The pipeline, one module per stage, each
importing only the stages before it: tables (the profile as flat numpy arrays, names
demangled) -> stacks (every sample's frames as node ids, drop_frames applied) -> graph (flat, cum
and the total for one sample type, merged as profile.Merge would) -> top (the -top rows) and
flame (the flame graph's call tree). units and text reproduce pprof's number formatting and its
-top layout; names holds the demangling heuristic and Go regexp handling; views encodes each view
as the bytes the web tier serves and the CLI prints.

<<<<<<< HEAD
pprof's options (query.py parses them) go through refine (label pseudo-frames, the name and tag
filters in applyFocus's order, granularity), which gives a Stacks like the profile's own, so
top and flame read it unchanged; callgraph, dot, peek and tags build pprof's other reports on it
(explore.py holds one report's state, pprofviews.py encodes them).
=======
Merges and diffs (go tool pprof a b c, -diff_base, -base, -normalize): prof holds a profile in
columns as pprof's Profile struct does; scaling (ScaleProfiles, ScaleN, Normalize, SetLabel),
merge and merge_out (profile.Merge, with keys' exact grouping) combine them; encode writes the
result as profile.proto; combine runs go tool pprof's steps and gives the views a merge's Tables
(restack reusing its inputs' stacks); diffview draws a diff's two sides.
>>>>>>> compare

It imports share.pprof (and share.errors) only: never the stores, the core or the web.
"""
