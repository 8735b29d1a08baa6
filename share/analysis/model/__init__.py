"""share.analysis.model: the decoded profile that every report reads, independent of options.

tables (ParsedProfile -> flat numpy arrays, demangled names, the sample types), stacks (every
sample's frames as node ids, root first, drop_frames applied), graph (flat, cum and pprof's
total for one sample type), labels (Sample.Label / NumLabel in bulk), kind (cpu, heap, ...),
names (pprof's demangling heuristic), goregexp (Go's regexp on RE2: linear time, Go's error
texts) and keys (exact grouping of integer sequences). Imports share.pprof and measure only.
"""
