package report

import (
	"bytes"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tlsbench/tlsbench/internal/plan"
	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

// pageCases are the results whose pages are golden: every stored result
// file (the MongoDB seed study's too), and a crypto run built here.
func pageCases(t *testing.T) map[string]*result.Result {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	files = append(files, filepath.Join("testdata", "mongodb", "seed.json"))
	out := map[string]*result.Result{"crypto": cryptoRun()}
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel("testdata", strings.TrimSuffix(f, ".json"))
		out[filepath.ToSlash(name)] = r
	}
	return out
}

func renderHTML(t *testing.T, r *result.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Build(r).HTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGoldenHTML renders the page of every case and compares it with
// testdata/NAME.html.golden (-update rewrites them).
func TestGoldenHTML(t *testing.T) {
	for name, r := range pageCases(t) {
		t.Run(name, func(t *testing.T) {
			goldenLines(t, filepath.Join("testdata", name+".html.golden"), renderHTML(t, r))
		})
	}
}

// goldenLines is golden for long outputs: it names the first line that
// differs instead of printing everything.
func goldenLines(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			t.Fatalf("output differs from %s (go test ./internal/report -update rewrites it) at line %d:\ngot:  %.300s\nwant: %.300s", path, i+1, g[i], w[i])
		}
	}
	t.Fatalf("output differs from %s in length: %d lines, want %d (go test ./internal/report -update rewrites it)", path, len(g), len(w))
}

// TestHTMLDeterministic renders every page and chart twice: golden files
// need byte-stable output, and gonum's must be too.
func TestHTMLDeterministic(t *testing.T) {
	drawn := false // a chart checked under -short
	for name, r := range pageCases(t) {
		if !bytes.Equal(renderHTML(t, r), renderHTML(t, r)) {
			t.Errorf("%s: two renderings of the page differ", name)
		}
		a, b := Build(r).Figures, Build(r).Figures
		for i := range a {
			draw := []func(chart.Figure) ([]byte, error){chart.SVG, chart.PNG}
			if testing.Short() {
				// Rasterizing every chart takes seconds: under -short
				// the pages (which hold the SVGs) and one chart's PNG
				// stand for them.
				if drawn {
					break
				}
				draw, drawn = draw[1:], true
			}
			for _, f := range draw {
				x, err := f(a[i])
				if err != nil {
					t.Fatal(err)
				}
				y, err := f(b[i])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(x, y) {
					t.Errorf("%s: two renderings of chart %s differ", name, a[i].ID)
				}
			}
		}
	}
}

// TestHTMLSelfContained checks that a page asks for nothing from anywhere:
// no script, stylesheet, image, font or frame by URL; the only URLs are the
// SVG namespaces.
func TestHTMLSelfContained(t *testing.T) {
	namespaces := []string{"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}
	urls := regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://[^"'\s)<>]*`)
	banned := regexp.MustCompile(`(?i)<script|<link|<img|<iframe|<object|<embed|@import|url\(|src=|href=`)
	for name, r := range pageCases(t) {
		page := string(renderHTML(t, r))
		// Unescaped: an escaped quote (&#39;) would run into the URL before it.
		for _, u := range urls.FindAllString(html.UnescapeString(page), -1) {
			// Result files may hold target URLs as text (escaped, never fetched).
			shown := strings.Contains(r.Target.URL, u) || strings.Contains(shownTarget(r.Target.URL), u)
			if !slices.Contains(namespaces, u) && !shown && !strings.Contains(strings.Join(r.Command, " "), u) {
				t.Errorf("%s: the page names %s", name, u)
			}
		}
		if m := banned.FindString(page); m != "" {
			t.Errorf("%s: the page has %q", name, m)
		}
	}
}

// TestHTMLContent checks what each page shows: findings at the top, a
// figure per chart, the text report's tables, notes and warnings.
func TestHTMLContent(t *testing.T) {
	tests := []struct {
		name   string
		charts []string
		want   []string
	}{
		{"measured-connect", []string{"connect-rate", "connect-rate-c1", "connect-rate-c2", "connect-phases"},
			[]string{"At c=1, a new connection costs 2.45 ms more with tls1.3 rsa2048", "Prefer TLS 1.3 to TLS 1.2", "connect c=2: phases, ms", "ephemeral ports"}},
		{"measured-postgres-connect", []string{"connect-rate-c1", "connect-phases"},
			[]string{"HelloRetryRequest for P-256", "OPENSSL_CONF", "TLSv1.3 TLS_AES_256_GCM_SHA384", "PostgreSQL 15.20"}},
		{"measured-rtt", []string{"connect-rate-c1", "connect-rate-c1-rtt20ms", "connect-phases", "connect-phases-rtt20ms", "rtt-overhead"},
			[]string{"At 20ms RTT (emulated)", "setup time (all phases but close)", "rtt 20ms: emulated in user space"}},
		{"measured-pool", []string{"pool-rate", "pool-rate-c1", "pool-rate-c4", "pool-p95"},
			[]string{"no measurable difference in requests per second", "None: no difference in this run is large and certain enough to act on."}},
		{"measured-ceilings", []string{"connect-rate", "connect-rate-c1", "connect-rate-c2", "connect-phases", "ceilings"},
			[]string{"40.5% of the 1770 its 2 cores can sign for", "server ceiling per key"}},
		{"measured-tunnels", []string{"connect-rate-c1", "connect-phases", "ceilings"},
			[]string{"Through stunnel rsa4096, a new connection costs", "a resumed handshake between stunnels", "tunnels, each set up once per run", "ssh aes256-ctr"}},
		{"measured-advise-confirm", []string{"advise-0"},
			[]string{"advise: predicted vs measured in the lab replay", "measured in the lab replay: 1 round trip", "The round trips missed: predicted 4, measured 7", "lab replay on postgres:18 PostgreSQL 18.4"}},
		{"failed", []string{"connect-phases"}, // one variant: no chart of one bar
			[]string{"error: tls1.3 ecdsa-p256 c=1: built-in server exited", "Only one variant was measured", "None: this run has nothing to compare."}},
		{"crypto", []string{"crypto-public-key", "crypto-ciphers"},
			[]string{"go1.26.8 signs per second on one core", "public key: operations/s"}},
		{"pool", []string{"pool-rate", "pool-rate-c1", "pool-rate-c4", "pool-p95"},
			[]string{"2 timeout errors", "12.7% to 14.9% fewer requests per second than plain"}},
	}
	cases := pageCases(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cases[tt.name]
			var ids []string
			for _, c := range Build(r).Figures {
				ids = append(ids, c.ID)
			}
			if !slices.Equal(ids, tt.charts) {
				t.Errorf("charts %v, want %v", ids, tt.charts)
			}
			page := string(renderHTML(t, r))
			for _, id := range tt.charts {
				if !strings.Contains(page, `<figure class="chart" id="chart-`+id+`">`) {
					t.Errorf("no figure for chart %s", id)
				}
			}
			if got := strings.Count(page, "<svg "); got != len(tt.charts) {
				t.Errorf("%d inline SVGs, want %d", got, len(tt.charts))
			}
			for _, w := range tt.want {
				if !strings.Contains(page, escaped(w)) {
					t.Errorf("the page lacks %q", w)
				}
			}
			// Findings come before the charts, charts before the tables.
			f, c, tb := strings.Index(page, `id="summary"`), strings.Index(page, `id="charts"`), strings.Index(page, `id="tables"`)
			if f < 0 || tb < 0 || (c >= 0 && (f > c || c > tb)) {
				t.Errorf("sections out of order: summary %d, charts %d, tables %d", f, c, tb)
			}
		})
	}
}

// escaped is s as html/template escapes text, for comparisons.
func escaped(s string) string {
	return strings.NewReplacer("&", "&amp;", "'", "&#39;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "+", "&#43;").Replace(s)
}

// TestHTMLEscapes renders a result whose strings hold markup: the page
// shows them as text.
func TestHTMLEscapes(t *testing.T) {
	r := connectRun()
	r.Notes = append(r.Notes, `<script>alert("note")</script>`)
	r.Error = `<img src=x onerror=alert(1)>`
	r.Target.Server.Settings = map[string]string{"ssl_ciphers": `"><script>x</script>`}
	page := string(renderHTML(t, r))
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") {
		t.Errorf("markup from the result reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;note&#34;)&lt;/script&gt;") {
		t.Errorf("the note is missing or escaped otherwise")
	}
}

// TestWriteCharts writes every chart of a result as SVG and PNG files.
func TestWriteCharts(t *testing.T) {
	r := cases["connect"]()
	n := len(Build(r).Figures)
	for _, format := range []string{"svg", "png"} {
		dir := filepath.Join(t.TempDir(), "charts")
		paths, err := Build(r).WriteCharts(dir, format)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != n {
			t.Fatalf("%s: %d files, want %d", format, len(paths), n)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			switch format {
			case "svg":
				if !bytes.HasPrefix(data, []byte("<?xml")) || !bytes.Contains(data, []byte("</svg>")) {
					t.Errorf("%s is not an SVG file", p)
				}
			case "png":
				img, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if w := img.Bounds().Dx(); w != int(chart.Width.Points()/72*chart.PNGDPI+0.5) {
					t.Errorf("%s is %d pixels wide", p, w)
				}
			}
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if _, err := Build(r).WriteCharts(file, "png"); err == nil {
		t.Error("charts written into a file, not a directory: no error")
	}
	if _, err := Build(r).WriteCharts(t.TempDir(), "gif"); err == nil {
		t.Error("unknown format: no error")
	}
}

// TestStyles checks the colours: plain always grey, each TLS variant its
// own, the same variant at another RTT the same.
func TestStyles(t *testing.T) {
	r := result.New()
	for _, id := range []string{"plain", "tls1.3 rsa2048", "tls1.3 ecdsa-p256", "plain rtt20ms", "tls1.3 rsa2048 rtt20ms"} {
		v := plan.Variant{ID: id, TLS: "1.3", Key: strings.Fields(id)[len(strings.Fields(id))-1]}
		if strings.HasPrefix(id, "plain") {
			v.TLS, v.Key = "off", ""
		}
		if strings.HasSuffix(id, "rtt20ms") {
			v.RTT = 20e6
			v.Key = strings.Fields(id)[1]
			if v.TLS == "off" {
				v.Key = ""
			}
		}
		r.Variants = append(r.Variants, v)
	}
	st := styles(newIndex(r))
	grey := chart.PlainStyle(0, false).Color
	if st["plain"].Color != grey || st["plain rtt20ms"].Color != grey {
		t.Error("plain is not grey")
	}
	if st["tls1.3 rsa2048"].Color == st["tls1.3 ecdsa-p256"].Color {
		t.Error("two TLS variants share a colour")
	}
	if st["tls1.3 rsa2048"].Color != st["tls1.3 rsa2048 rtt20ms"].Color || !st["tls1.3 rsa2048 rtt20ms"].Dashed {
		t.Error("the same variant at another RTT is not the same colour, dashed")
	}
	if st["tls1.3 rsa2048"].Color != chart.VariantStyle(0, false).Color {
		t.Error("the first TLS variant does not take the first colour")
	}
}

// TestHTMLOdd renders results that a run should not produce but a file can
// hold: the page says what it can and draws what it has.
func TestHTMLOdd(t *testing.T) {
	zero := cases["connect"]()
	for i := range zero.Trials {
		zero.Trials[i].Ops, zero.Trials[i].Latency, zero.Trials[i].Phases = 0, result.Hist{}, nil
	}
	stream := run(plan.Spec{Experiments: []plan.Experiment{plan.Stream}, Lab: "postgres", TLS: []string{"off", "1.3"}, Keys: []string{"rsa2048"}, Concurrency: []int{1, 4}},
		[]string{"plain", "tls1.3 rsa2048"}, map[plan.Experiment]map[int]map[string]figure{plan.Stream: {1: poolFigures(1), 4: poolFigures(4)}}, -1)
	tests := []struct {
		name   string
		r      *result.Result
		charts int
		want   string
	}{
		{"empty", result.New(), 0, "No trial finished"},
		{"unknown variant, no elapsed time", &result.Result{
			Trials: []result.Trial{{Experiment: "soak", Variant: "mystery", Concurrency: 3, Ops: 5}},
		}, 0, "Only one variant was measured (mystery)"},
		{"every operation failed", zero, 1, "no measurable difference"},
		{"stream", stream, 4, "Reading a large result (stream), TLS made"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := len(Build(tt.r).Figures); n != tt.charts {
				t.Errorf("%d charts, want %d", n, tt.charts)
			}
			page := string(renderHTML(t, tt.r))
			if !strings.Contains(page, escaped(tt.want)) {
				t.Errorf("the page lacks %q", tt.want)
			}
		})
	}
}
