module pprof-share/tests/gotarget

go 1.19
