"""share.analysis.reports: pprof's reports (internal/report), each on one refined graph.

explore holds one report's state (the refined graph, its labels and header); top is -top's
rows, peek -peek's callers and callees (and the sandwich), tags -tags, callgraph the call
graph's edges and trimming, dot and dotfmt -dot's Graphviz text (nodetags its nodelets), svg
the graph laid out by Graphviz, summary a profile in a few lines, search a regex's share.
Imports measure, model, refine and flame.
"""
