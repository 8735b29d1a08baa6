// Command gotarget is a stand-in for a service under `pprof-share collect`: it serves
// net/http/pprof on -addr and keeps a little CPU and heap busy, so its profiles have samples.
// It prints the address it listens on (useful with -addr 127.0.0.1:0) and runs until killed.
//
// Standard library only: tests/test_cli_collect.py builds it with GOPROXY=off.
//
//	go build -o /tmp/gotarget . && /tmp/gotarget -addr 127.0.0.1:6060
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"time"
)

// kept holds recent allocations so the heap profile has live objects.
var kept [][]byte

func busy() {
	sum := sha256.Sum256([]byte("pprof-share"))
	for i := 0; ; i++ {
		sum = sha256.Sum256(sum[:])
		if i%1024 == 0 {
			kept = append(kept, make([]byte, 64<<10))
			if len(kept) > 64 {
				kept = kept[1:]
			}
			time.Sleep(time.Millisecond) // a fifth of a core or so: the machine is shared
		}
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to serve net/http/pprof on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stdout, ln.Addr().String())
	go busy()
	log.Fatal(http.Serve(ln, nil))
}
