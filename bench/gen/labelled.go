// Command labelled writes a real heavy labelled CPU profile: it profiles itself with
// runtime/pprof while simulating a busy server.
//
// Worker goroutines (one per CPU) handle "requests" one after another, each wrapped in
// pprof.Do(ctx, pprof.Labels("request_id", <unique>, "route", ..., "tenant", ...)), so nearly
// every CPU sample carries its own label set and samples with the same stack are not merged:
// the profile grows with the request count, as a busy server's does. Requests go through a
// route-specific middleware chain and handler built from several dozen functions (standard
// library encoders, hashes and compressors, mutually recursive parsers, a recursive tree walk,
// small helpers the compiler inlines), so stacks differ.
//
// The sampling rate is raised to -hz with runtime.SetCPUProfileRate before
// pprof.StartCPUProfile (Go then prints "cannot set cpu profile rate until previous profile has
// finished" once; the raised rate stays, and the profile's period is 1/hz). The kernel's CPU
// timers fire at most once per scheduler tick (CONFIG_HZ, 250 on the machine this was written
// on), which alone would need minutes of CPU for a few MB, so a sampler thread also sends each
// worker thread SIGPROF hz times per wall-clock second; the runtime records those like timer
// ticks. The bytes are runtime/pprof's own; the cpu values are approximate (a worker the OS
// deschedules still gets samples). Linux only.
//
//	go build -o /tmp/labelled . && /tmp/labelled -out ../out/labelled-go-cpu.pb.gz
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"math/big"
	"math/rand"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/template"
	"time"
)

// request is one simulated request; handlers leave their result in sink so no work is dead.
type request struct {
	id     uint64
	tenant int
	rng    *rand.Rand
	body   []byte
	sink   uint64
}

type handler func(*request)

type route struct {
	name  string
	chain []func(*request, handler) // middleware, outermost first
	serve handler
}

type order struct {
	ID       int      `json:"id"`
	Customer string   `json:"customer"`
	Items    []item   `json:"items"`
	Tags     []string `json:"tags"`
	Total    float64  `json:"total"`
}

type item struct {
	SKU   string  `json:"sku"`
	Qty   int     `json:"qty"`
	Price float64 `json:"price"`
}

type node struct {
	key         int
	left, right *node
}

var (
	secret   = []byte("bench-secret-key")
	emailRe  = regexp.MustCompile(`^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$`)
	skuRe    = regexp.MustCompile(`^[A-Z]{3}-\d{4,6}$`)
	report   *template.Template
	cacheMu  sync.Mutex
	cache    = map[string][]byte{}
	limiterM sync.Mutex
	limiter  = map[int]int{}
)

const reportText = `{{range .}}order {{.ID}} for {{.Customer}}:{{range .Items}}
  {{.SKU}} x{{.Qty}} @ {{printf "%.2f" .Price}}{{end}}
  total {{printf "%.2f" .Total}} tags {{join .Tags ","}}
{{end}}`

func init() {
	report = template.Must(template.New("r").Funcs(template.FuncMap{"join": strings.Join}).
		Parse(reportText))
}

// --- small helpers the compiler inlines (they show up as inlined frames) ---

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

func mix(h, v uint64) uint64 { return (h ^ v) * 0x100000001b3 }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func between(rng *rand.Rand, lo, hi int) int { return lo + rng.Intn(hi-lo+1) }

// --- request bodies ---

func makeOrder(r *request, n int) order {
	o := order{ID: int(r.id % 1e6), Customer: fmt.Sprintf("user%d@tenant%d.example.com", r.id%997, r.tenant)}
	for i := 0; i < n; i++ {
		o.Items = append(o.Items, item{
			SKU:   fmt.Sprintf("%c%c%c-%05d", 'A'+r.rng.Intn(26), 'A'+r.rng.Intn(26), 'A'+r.rng.Intn(26), r.rng.Intn(99999)),
			Qty:   between(r.rng, 1, 9),
			Price: float64(r.rng.Intn(100000)) / 100,
		})
		o.Total += o.Items[i].Price * float64(o.Items[i].Qty)
	}
	o.Tags = strings.Fields("new priority gift express intl")[:between(r.rng, 1, 5)]
	return o
}

func makeBody(r *request, n int) []byte {
	orders := make([]order, n)
	for i := range orders {
		orders[i] = makeOrder(r, between(r.rng, 2, 8))
	}
	b, err := json.Marshal(orders)
	if err != nil {
		panic(err)
	}
	return b
}

// --- middleware ---

func authenticate(r *request, next handler) {
	token := make([]byte, 48)
	binary.LittleEndian.PutUint64(token, r.id)
	mac := hmac.New(sha256.New, secret)
	for i := 0; i < 24; i++ {
		mac.Write(token)
		token = mac.Sum(token[:0])
		mac.Reset()
	}
	r.sink = mix(r.sink, uint64(token[0]))
	next(r)
}

func logRequest(r *request, next handler) {
	var sb strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&sb, "ts=%d req=%x tenant=%d step=%d ", time.Now().UnixNano(), r.id, r.tenant, i)
	}
	r.sink = mix(r.sink, uint64(sb.Len()))
	next(r)
	r.sink = mix(r.sink, uint64(len(strconv.FormatUint(r.sink, 36))))
}

func rateLimit(r *request, next handler) {
	limiterM.Lock()
	limiter[r.tenant]++
	n := limiter[r.tenant]
	limiterM.Unlock()
	r.sink = mix(r.sink, uint64(clamp(n, 0, 1<<20)))
	next(r)
}

func decodeBody(r *request, next handler) {
	r.body = makeBody(r, between(r.rng, 2, 6))
	var orders []order
	if err := json.Unmarshal(r.body, &orders); err != nil {
		panic(err)
	}
	r.sink = mix(r.sink, uint64(len(orders)))
	next(r)
}

func recoverPanics(r *request, next handler) {
	defer func() {
		if v := recover(); v != nil {
			r.sink = mix(r.sink, 1)
		}
	}()
	next(r)
}

// --- handlers ---

func listOrders(r *request) {
	orders := make([]order, between(r.rng, 10, 30))
	for i := range orders {
		orders[i] = makeOrder(r, between(r.rng, 1, 6))
	}
	sort.Slice(orders, func(i, j int) bool { return orders[i].Total < orders[j].Total })
	r.sink = mix(r.sink, uint64(len(encodeGzip(encodeJSON(orders)))))
}

func encodeJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// gzips are reused, as servers do: a new gzip.Writer allocates and clears ~1 MB.
var gzips = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func encodeGzip(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzips.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(b)
	zw.Close()
	gzips.Put(zw)
	return buf.Bytes()
}

func getOrder(r *request) {
	key := fmt.Sprintf("order/%d/%d", r.tenant, r.id%64)
	cacheMu.Lock()
	b, ok := cache[key]
	cacheMu.Unlock()
	if !ok {
		b = encodeJSON(makeOrder(r, 6))
		cacheMu.Lock()
		cache[key] = b
		cacheMu.Unlock()
	}
	var o order
	for i := 0; i < 6; i++ {
		if err := json.Unmarshal(b, &o); err != nil {
			panic(err)
		}
	}
	r.sink = mix(r.sink, checksum(b))
}

func checksum(b []byte) uint64 {
	s := sha256.Sum256(b)
	for i := 0; i < 16; i++ {
		s = sha256.Sum256(s[:])
	}
	return binary.LittleEndian.Uint64(s[:]) ^ uint64(crc32.ChecksumIEEE(b))
}

func createOrder(r *request) {
	var orders []order
	if err := json.Unmarshal(r.body, &orders); err != nil {
		panic(err)
	}
	for _, o := range orders {
		validate(r, o)
		r.sink = mix(r.sink, price(o).Uint64())
	}
	insertAll(r, 200)
}

func validate(r *request, o order) {
	if emailRe.MatchString(strings.ToLower(o.Customer)) {
		r.sink = mix(r.sink, 3)
	}
	for _, it := range o.Items {
		if skuRe.MatchString(it.SKU) {
			r.sink = mix(r.sink, uint64(it.Qty))
		}
	}
}

func price(o order) *big.Int {
	total := big.NewInt(1)
	for _, it := range o.Items {
		p := big.NewInt(int64(it.Price*100) + 1)
		total.Mul(total, p.Exp(p, big.NewInt(int64(it.Qty)+8), nil))
	}
	return total.Mod(total, big.NewInt(1_000_000_007))
}

func insertAll(r *request, n int) {
	var root *node
	for i := 0; i < n; i++ {
		root = insert(root, r.rng.Intn(1<<20))
	}
	r.sink = mix(r.sink, uint64(height(root)))
}

func insert(n *node, k int) *node {
	if n == nil {
		return &node{key: k}
	}
	if k < n.key {
		n.left = insert(n.left, k)
	} else {
		n.right = insert(n.right, k)
	}
	return n
}

func height(n *node) int {
	if n == nil {
		return 0
	}
	l, r := height(n.left), height(n.right)
	if l > r {
		return l + 1
	}
	return r + 1
}

func search(r *request) {
	words := strings.Fields(strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota ", 20))
	t := &trie{}
	for i, w := range words {
		t.add(w + strconv.Itoa(i%17))
	}
	scores := make([]int, 0, len(words))
	for i, w := range words {
		scores = append(scores, t.count(w+strconv.Itoa(i%13)))
	}
	quicksort(scores)
	r.sink = mix(r.sink, uint64(scores[len(scores)-1]))
}

type trie struct {
	next [128]*trie
	n    int
}

func (t *trie) add(w string) {
	if w == "" {
		t.n++
		return
	}
	c := w[0] & 127
	if t.next[c] == nil {
		t.next[c] = &trie{}
	}
	t.next[c].add(w[1:])
}

func (t *trie) count(w string) int {
	if t == nil {
		return 0
	}
	if w == "" {
		return t.n
	}
	return t.next[w[0]&127].count(w[1:]) + 1
}

func quicksort(a []int) {
	if len(a) < 2 {
		return
	}
	p := a[len(a)/2]
	i, j := 0, len(a)-1
	for i <= j {
		for a[i] < p {
			i++
		}
		for a[j] > p {
			j--
		}
		if i <= j {
			a[i], a[j] = a[j], a[i]
			i, j = i+1, j-1
		}
	}
	quicksort(a[:j+1])
	quicksort(a[i:])
}

func renderReport(r *request) {
	orders := make([]order, between(r.rng, 3, 8))
	for i := range orders {
		orders[i] = makeOrder(r, 4)
	}
	var buf bytes.Buffer
	if err := report.Execute(&buf, orders); err != nil {
		panic(err)
	}
	r.sink = mix(r.sink, uint64(crc32.ChecksumIEEE(buf.Bytes())))
}

func evaluate(r *request) {
	for i := 0; i < 30; i++ {
		e := expression(r, 6)
		p := &parser{s: e}
		r.sink = mix(r.sink, uint64(p.expr()))
	}
}

func expression(r *request, depth int) string {
	if depth == 0 || r.rng.Intn(4) == 0 {
		return strconv.Itoa(r.rng.Intn(100))
	}
	ops := "+-*"
	if r.rng.Intn(3) == 0 {
		return "(" + expression(r, depth-1) + ")"
	}
	return expression(r, depth-1) + string(ops[r.rng.Intn(3)]) + expression(r, depth-1)
}

// parser is a recursive descent parser: expr -> term -> factor -> expr (mutual recursion).
type parser struct {
	s   string
	pos int
}

func (p *parser) expr() int {
	v := p.term()
	for p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
		op := p.s[p.pos]
		p.pos++
		if op == '+' {
			v += p.term()
		} else {
			v -= p.term()
		}
	}
	return v
}

func (p *parser) term() int {
	v := p.factor()
	for p.pos < len(p.s) && p.s[p.pos] == '*' {
		p.pos++
		v *= p.factor()
	}
	return v
}

func (p *parser) factor() int {
	if p.pos < len(p.s) && p.s[p.pos] == '(' {
		p.pos++
		v := p.expr()
		p.pos++ // ')'
		return v
	}
	start := p.pos
	for p.pos < len(p.s) && isDigit(p.s[p.pos]) {
		p.pos++
	}
	v, _ := strconv.Atoi(p.s[start:p.pos])
	return v
}

func thumbnail(r *request) {
	const w, h = 96, 96
	img := make([]uint8, w*h)
	r.rng.Read(img)
	for pass := 0; pass < 3; pass++ {
		img = blur(img, w, h)
	}
	r.sink = mix(r.sink, uint64(crc32.ChecksumIEEE(img)))
}

func blur(src []uint8, w, h int) []uint8 {
	dst := make([]uint8, len(src))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			sum, n := 0, 0
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					xx, yy := clamp(x+dx, 0, w-1), clamp(y+dy, 0, h-1)
					sum += int(src[yy*w+xx])
					n++
				}
			}
			dst[y*w+x] = uint8(sum / n)
		}
	}
	return dst
}

func exportCSV(r *request) {
	var buf bytes.Buffer
	for i := 0; i < 300; i++ {
		buf.WriteString(strconv.Itoa(i))
		buf.WriteByte(',')
		buf.WriteString(strconv.FormatFloat(r.rng.Float64()*1e4, 'f', 3, 64))
		buf.WriteByte(',')
		buf.WriteString(base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(r.rng.Int()))))
		buf.WriteByte('\n')
	}
	r.sink = mix(r.sink, uint64(len(encodeGzip(buf.Bytes()))))
}

func uploadFile(r *request) {
	data := make([]byte, 16<<10)
	r.rng.Read(data)
	zr, err := gzip.NewReader(bytes.NewReader(encodeGzip(data)))
	if err != nil {
		panic(err)
	}
	n, _ := io.Copy(io.Discard, zr)
	r.sink = mix(r.sink, uint64(n)^checksum(data))
}

var routes = []route{
	{"GET /api/v1/orders", []func(*request, handler){recoverPanics, logRequest, authenticate, rateLimit}, listOrders},
	{"GET /api/v1/orders/{id}", []func(*request, handler){recoverPanics, authenticate, logRequest}, getOrder},
	{"POST /api/v1/orders", []func(*request, handler){recoverPanics, logRequest, authenticate, rateLimit, decodeBody}, createOrder},
	{"GET /api/v1/search", []func(*request, handler){recoverPanics, rateLimit, logRequest}, search},
	{"GET /reports/daily", []func(*request, handler){logRequest, authenticate}, renderReport},
	{"POST /api/v1/eval", []func(*request, handler){recoverPanics, authenticate, rateLimit}, evaluate},
	{"GET /img/thumb", []func(*request, handler){logRequest}, thumbnail},
	{"GET /export.csv", []func(*request, handler){recoverPanics, logRequest, authenticate}, exportCSV},
	{"PUT /upload", []func(*request, handler){recoverPanics, logRequest, authenticate, rateLimit}, uploadFile},
	{"POST /api/v2/orders", []func(*request, handler){logRequest, rateLimit, decodeBody, authenticate}, createOrder},
	{"GET /api/v2/orders", []func(*request, handler){authenticate, rateLimit}, listOrders},
	{"GET /healthz", nil, func(r *request) { r.sink = mix(r.sink, checksum([]byte("ok"))) }},
}

// serve runs the route's middleware chain, outermost first, around its handler.
func serve(rt *route, r *request, i int) {
	if i == len(rt.chain) {
		rt.serve(r)
		return
	}
	rt.chain[i](r, func(r *request) { serve(rt, r, i+1) })
}

// threads holds each worker's thread id, for the sampler.
var threads []atomic.Int32

// worker handles requests one after another on its own thread, until the deadline.
func worker(ctx context.Context, w int, next *uint64, deadline time.Time) {
	runtime.LockOSThread() // so the thread id the sampler signals runs this worker's requests
	threads[w].Store(int32(syscall.Gettid()))
	defer threads[w].Store(0)
	rng := rand.New(rand.NewSource(int64(w + 1)))
	for time.Now().Before(deadline) {
		id := atomic.AddUint64(next, 1)
		rt := &routes[rng.Intn(len(routes))]
		r := &request{id: id, tenant: rng.Intn(500), rng: rng}
		labels := pprof.Labels(
			"request_id", fmt.Sprintf("%08x-%08x", id, id*2654435761%(1<<32)),
			"route", rt.name,
			"tenant", fmt.Sprintf("tenant-%03d", r.tenant),
		)
		pprof.Do(ctx, labels, func(context.Context) { serve(rt, r, 0) })
	}
}

// sample sends SIGPROF to every worker thread, hz times a second, until stop closes.
// runtime.validSIGPROF takes a signal from tgkill (neither timer's code) as a sample.
func sample(hz int, stop chan struct{}, done chan struct{}) {
	defer close(done)
	runtime.LockOSThread()
	pid := os.Getpid()
	period := time.Second / time.Duration(hz)
	next := time.Now()
	for {
		select {
		case <-stop:
			return
		default:
		}
		next = next.Add(period)
		if wait := time.Until(next); wait > 0 {
			ts := syscall.NsecToTimespec(int64(wait))
			syscall.Nanosleep(&ts, nil) // time.Sleep goes through the netpoller: 1 ms granularity
		} else {
			next = time.Now() // fell behind (machine busy): skip the missed ticks
		}
		for i := range threads {
			if tid := threads[i].Load(); tid != 0 {
				syscall.Tgkill(pid, int(tid), syscall.SIGPROF)
			}
		}
	}
}

func main() {
	out := flag.String("out", "labelled-go-cpu.pb.gz", "profile to write (gzipped, as runtime/pprof writes it)")
	seconds := flag.Float64("seconds", 30, "how long to profile")
	hz := flag.Int("hz", 9000, "CPU samples per second per busy thread (runtime/pprof's default is 100)")
	workers := flag.Int("workers", runtime.NumCPU(), "goroutines handling requests, one per CPU")
	gcPercent := flag.Int("gc", 400, "GOGC: a server's heap is larger than this program's, so GC runs less often")
	flag.Parse()

	// One P more than workers, so the sampler always finds one free and keeps its rate.
	runtime.GOMAXPROCS(*workers + 1)
	debug.SetGCPercent(*gcPercent)
	threads = make([]atomic.Int32, *workers)
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	// Set first: StartCPUProfile's own SetCPUProfileRate(100) then only warns, and the
	// profile's period is 1/hz.
	runtime.SetCPUProfileRate(*hz)
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go sample(*hz, stop, done)
	start := time.Now()
	deadline := start.Add(time.Duration(*seconds * float64(time.Second)))
	var next uint64
	var wg sync.WaitGroup
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			worker(context.Background(), w, &next, deadline)
		}(w)
	}
	wg.Wait()
	close(stop)
	<-done
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	st, err := os.Stat(*out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "%s: %.1f MB gzip, %d requests in %.1fs at %d Hz\n",
		*out, float64(st.Size())/1e6, next, time.Since(start).Seconds(), *hz)
}
