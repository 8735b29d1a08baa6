"""share.analysis.refine: pprof's options and the refinements they make, in Go 1.19's order.

query parses a query string (or the CLI's flags) into canonical options with pprof's error
texts; refine applies them to a profile's Stacks: tagroot/tagleaf label pseudo-frames, then
focus/ignore/hide/show and show_from (locfilter), the tag filters (tagfilter), prune_from,
then the granularity (nodes: pprof's NodeInfo per line). The result is a Stacks and Graph like
the profile's own, so every report reads it unchanged. Imports measure and model only.
"""
