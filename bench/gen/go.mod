module pprof-share/bench/gen

go 1.19
