"""share.analysis.combine: profiles combined as `go tool pprof a b c` and -diff_base combine them.

prof holds a profile in columns as pprof's Profile struct does; merge and merge_out are
profile.Merge (with its keys' exact grouping), scaling ScaleProfiles / Normalize / SetLabel,
encode writes a Prof as profile.proto bytes, restack reuses the inputs' Stacks for a merge, and
combine runs go tool pprof's steps to give the views a merge's or a diff's Tables (Shown).
Imports measure and model only.
"""
