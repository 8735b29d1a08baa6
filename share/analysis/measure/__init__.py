"""share.analysis.measure: numbers and text as `go tool pprof` prints them (internal/measurement,
internal/report's text). units scales values between units and formats them (the -top
columns, percentages, Go's int64 wrap-around); text writes the header lines (ProfileLabels)
and the -top table (printText). The lowest folder of share.analysis: it imports nothing of share.
"""
