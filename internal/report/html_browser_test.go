package report

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tlsbench/tlsbench/internal/report/chart"
	"github.com/tlsbench/tlsbench/internal/result"
)

var screenshots = flag.String("screenshots", "", "keep the browser test's screenshots in this directory")

// Deadlines of the browser test: starting Chromium, and each page (open,
// measure, screenshot), generous for a loaded two-core machine; one slow
// page fails alone, with its name, instead of the pages after it.
const (
	browserStartTimeout = time.Minute
	pageTimeout         = 30 * time.Second
)

// chromium finds the browser: Debian's chromium, which scripts/install.sh
// installs. Without it the test skips, except in CI, where it fails. Under
// -short it skips: a browser is not the unit layer.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a browser: skipped under -short")
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: scripts/install.sh installs it")
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the HTML report is not checked in a browser")
	return ""
}

// TestHTMLInChromium opens report pages in headless Chromium, as a reader
// would from a file: every chart must render with a size and text, the
// console must stay empty, nothing may be fetched but the page itself and
// data: URLs, and a screenshot must show the charts' colours. A page built
// to break those rules shows that the checks catch it.
func TestHTMLInChromium(t *testing.T) {
	exe := chromium(t)
	cases := pageCases(t)
	dir := t.TempDir()

	// The browser lives as long as the test; the deadlines are per step.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("force-color-profile", "srgb"),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	b := &tab{ctx: browser}
	started := make(chan error, 1)
	go func() { started <- chromedp.Listen(browser, b.listen) }() // starts the browser
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("starting %s: %v", exe, err)
		}
	case <-time.After(browserStartTimeout):
		t.Fatalf("%s did not start within %v", exe, browserStartTimeout)
	}

	// Every page of the golden test: every kind of chart, and pages with
	// little on them; among them the page of the README's PostgreSQL run.
	names := slices.Sorted(maps.Keys(cases))
	if !slices.Contains(names, "readme-postgres") {
		t.Fatal("no testdata/readme-postgres.json: the README's page is not checked")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r := cases[name]
			path := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".html")
			if err := os.WriteFile(path, renderHTML(t, r), 0o644); err != nil {
				t.Fatal(err)
			}
			v := b.visit(t, path)
			charts := Build(r).Figures
			if len(v.figures) != len(charts) {
				t.Errorf("%d charts on the page, want %d", len(v.figures), len(charts))
			}
			for i, f := range v.figures {
				if i < len(charts) && f.ID != "chart-"+charts[i].ID {
					t.Errorf("figure %d is %s, want chart-%s", i, f.ID, charts[i].ID)
				}
				if !f.rendered() {
					t.Errorf("chart %s does not render: %+v", f.ID, f)
				}
			}
			if *screenshots != "" {
				if err := os.MkdirAll(*screenshots, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(*screenshots, strings.ReplaceAll(name, "/", "-")+".png"), v.shot, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			img, err := png.Decode(bytes.NewReader(v.shot))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			ink, colours := pixels(img)
			if ink < 0.04 || colours < 24 {
				t.Errorf("the screenshot looks blank: %.1f%% of its pixels are not white, %d colours", 100*ink, colours)
			}
			// The charts' own colours are on screen: plain's grey where a
			// plain variant was measured and the first TLS variant's.
			// (A page without charts has no colour key either.)
			plain := slices.ContainsFunc(r.Trials, func(t result.Trial) bool { return newIndex(r).info[t.Variant].Plain() })
			if len(charts) > 0 && plain && !hasColour(img, chart.PlainStyle(0, false).Color) {
				t.Errorf("plain's grey %s is nowhere in the screenshot", chart.Hex(chart.PlainStyle(0, false).Color))
			}
			tls := slices.ContainsFunc(r.Trials, func(t result.Trial) bool { return !direct(newIndex(r).info[t.Variant]) })
			if len(charts) > 0 && tls && !hasColour(img, chart.VariantStyle(0, false).Color) {
				t.Errorf("the first variant colour %s is nowhere in the screenshot", chart.Hex(chart.VariantStyle(0, false).Color))
			}
			// The README's page, the one a newcomer sees first, needs no
			// sideways scrolling (others may: their tables scroll in their
			// boxes); the target in a heading takes at most two lines.
			if name == "readme-postgres" {
				for _, o := range v.scrolled {
					t.Errorf("a table to scroll sideways: %s", o)
				}
			}
			if v.heading > 2 {
				t.Errorf("the heading takes %.0f lines", v.heading)
			}
			for _, o := range v.overflows {
				t.Errorf("wider than the page outside its scroll box: %s", o)
			}
			for _, o := range v.overlaps {
				t.Errorf("chart labels overlap: %s", o)
			}
			for _, m := range v.console {
				t.Errorf("console: %s", m)
			}
			for _, u := range v.foreign() {
				t.Errorf("the page fetched %s", u)
			}
		})
	}

	t.Run("the checks catch a broken page", func(t *testing.T) {
		path := filepath.Join(dir, "broken.html")
		// An image from the network (a closed loopback port: nothing leaves
		// the machine), a script that logs an error, a chart of no size.
		// A footnote wider than the page, two labels on top of each other.
		page := `<!DOCTYPE html><html><head><title>broken</title></head><body><main>
<figure class="chart" id="chart-empty"><svg width="0" height="0"></svg></figure>
<figure class="chart" id="chart-crowded"><svg width="400" height="100"><text x="10" y="50">tls1.3 ecdsa-p256 resume</text><text x="14" y="52">tls1.2 rsa2048</text></svg></figure>
<div class="tbl"><h3>wide</h3><div class="foot"><p style="white-space: nowrap">` + strings.Repeat("a footnote that does not wrap ", 80) + `</p></div></div>
<img src="http://127.0.0.1:9/x.png" alt="">
<script>console.error("boom")</script>
</main></body></html>`
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		v := b.visit(t, path)
		if len(v.figures) != 2 || v.figures[0].rendered() {
			t.Errorf("the empty chart passed: %+v", v.figures)
		}
		if !slices.ContainsFunc(v.overflows, func(o string) bool { return strings.HasPrefix(o, "the page:") }) ||
			!slices.ContainsFunc(v.overflows, func(o string) bool { return strings.HasPrefix(o, "wide: foot") }) {
			t.Errorf("the footnote wider than the page went unseen: %q", v.overflows)
		}
		if len(v.overlaps) != 1 || !strings.Contains(v.overlaps[0], "chart-crowded") {
			t.Errorf("the crowded labels went unseen: %q", v.overlaps)
		}
		if !slices.ContainsFunc(v.console, func(m string) bool { return strings.Contains(m, "boom") }) {
			t.Errorf("console.error went unseen: %q", v.console)
		}
		if !slices.Contains(v.foreign(), "http://127.0.0.1:9/x.png") {
			t.Errorf("the image request went unseen: %q", v.requests)
		}
	})
}

// tab is the browser's tab and what it saw on the current page.
type tab struct {
	ctx context.Context
	mu  sync.Mutex
	url string
	// console holds console calls, exceptions and browser log warnings and
	// errors; requests every URL the page asked for.
	console, requests []string
}

func (b *tab) listen(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		b.console = append(b.console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
	case *runtime.EventExceptionThrown:
		b.console = append(b.console, "exception: "+ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			b.console = append(b.console, fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	}
}

// chartBox is a figure of the page as the browser laid it out.
type chartBox struct {
	ID                 string
	Width, Height      float64
	Texts, Shapes      int
	TextWidth, Visible float64
}

func (f chartBox) rendered() bool {
	return f.Width >= 300 && f.Height >= 80 && f.Texts > 0 && f.Shapes > 0 && f.TextWidth > 0 && f.Visible > 0
}

// visited is what a page showed and did: overflows name what reaches
// past the page's column outside a scroll box of its own, overlaps the
// charts' texts that cover each other.
type visited struct {
	figures             []chartBox
	shot                []byte
	console, requests   []string
	overflows, overlaps []string
	// scrolled names the tables wider than the page, which scroll in
	// their box; heading is how many lines the h1's target takes.
	scrolled []string
	heading  float64
	url      string
}

// overflowJS lists what is wider than the page's column without a scroll
// box of its own to hold it: the page itself (a horizontal scroll bar), a
// table's box, its footnotes, a chart. A table wider than its box scrolls
// inside it, which is how it may be wider.
const overflowJS = `(() => {
	const out = [], main = document.querySelector('main');
	if (!main) return out;
	const cs = getComputedStyle(main), right = main.getBoundingClientRect().right - parseFloat(cs.paddingRight) + 1;
	if (document.documentElement.scrollWidth > window.innerWidth)
		out.push('the page: ' + document.documentElement.scrollWidth + ' px in a ' + window.innerWidth + ' px window');
	const name = e => (e.closest('.tbl') ? e.closest('.tbl').querySelector('h3').textContent : e.id || e.className).slice(0, 60);
	for (const e of document.querySelectorAll('.tbl .scroll, .tbl .foot, .prose, figure.chart')) {
		const r = e.getBoundingClientRect();
		if (r.right > right) out.push(name(e) + ': ' + e.className + ' ends at ' + Math.round(r.right) + ' px, the column at ' + Math.round(right));
		if (!e.classList.contains('scroll') && e.scrollWidth > e.clientWidth + 1)
			out.push(name(e) + ': ' + (e.className || e.tagName) + ' is ' + e.scrollWidth + ' px wide in ' + e.clientWidth);
	}
	for (const s of document.querySelectorAll('.tbl .scroll')) {
		const st = getComputedStyle(s);
		if (s.scrollWidth > s.clientWidth + 1 && st.overflowX !== 'auto' && st.overflowX !== 'scroll')
			out.push(name(s) + ': cut off, not scrolled');
	}
	return out;
})()`

// headingLinesJS is how many lines the page's heading takes below the
// tool's name: its height over its line height.
const headingLinesJS = `(() => {
	const h = document.querySelector('h1');
	if (!h) return 0;
	const tool = h.querySelector('.tool'), lh = parseFloat(getComputedStyle(h).lineHeight);
	return Math.round((h.getBoundingClientRect().height - (tool ? tool.getBoundingClientRect().height : 0)) / lh);
})()`

// scrolledJS lists the tables wider than their box, which a reader must
// scroll sideways to read whole.
const scrolledJS = `Array.from(document.querySelectorAll('.tbl .scroll')).filter(s => s.scrollWidth > s.clientWidth + 1)
	.map(s => s.closest('.tbl').querySelector('h3').textContent + ': ' + s.scrollWidth + ' px in ' + s.clientWidth)`

// overlapJS lists the texts of each chart that overlap another text of
// it by more than a sliver: 2 px across and 40% of the lower one's height
// (the lines of a wrapped label touch in their boxes' leading, no more).
const overlapJS = `(() => {
	const out = [];
	for (const f of document.querySelectorAll('figure.chart')) {
		const boxes = Array.from(f.querySelectorAll('svg text')).filter(t => t.textContent.trim() !== '')
			.map(t => ({t: t.textContent, r: t.getBoundingClientRect()}));
		for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
			const a = boxes[i].r, b = boxes[j].r;
			const w = Math.min(a.right, b.right) - Math.max(a.left, b.left), h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
			if (w > 2 && h > 0.4 * Math.min(a.height, b.height)) out.push(f.id + ': "' + boxes[i].t + '" and "' + boxes[j].t + '"');
		}
	}
	return out;
})()`

// foreign lists the requests for anything but the page and data: URLs.
func (v visited) foreign() []string {
	var out []string
	for _, u := range v.requests {
		if u != v.url && !strings.HasPrefix(u, "data:") {
			out = append(out, u)
		}
	}
	return out
}

// visit opens a file, measures its charts and takes a full-page screenshot,
// all within pageTimeout.
func (b *tab) visit(t *testing.T, path string) visited {
	t.Helper()
	url := "file://" + path
	b.mu.Lock()
	b.console, b.requests = nil, nil
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(b.ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s (deadline %v a page): %v", url, pageTimeout, err)
	}
	figs, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartBox](`Array.from(document.querySelectorAll('figure.chart')).map(f => {
		const s = f.querySelector('svg'), r = s ? s.getBoundingClientRect() : {width: 0, height: 0};
		const texts = s ? Array.from(s.querySelectorAll('text')) : [];
		return {ID: f.id, Width: r.width, Height: r.height, Texts: texts.length,
			Shapes: s ? s.querySelectorAll('path').length : 0,
			TextWidth: texts.reduce((w, t) => w + t.getBBox().width, 0),
			Visible: s ? parseFloat(getComputedStyle(s).opacity) : 0};
	})`))
	if err != nil {
		t.Fatalf("measuring the charts of %s (deadline %v a page): %v", url, pageTimeout, err)
	}
	heading, err := chromedp.Run(ctx, chromedp.Evaluate[float64](headingLinesJS))
	if err != nil {
		t.Fatalf("measuring the heading of %s: %v", url, err)
	}
	scrolled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](scrolledJS))
	if err != nil {
		t.Fatalf("measuring the tables of %s: %v", url, err)
	}
	overflows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](overflowJS))
	if err != nil {
		t.Fatalf("measuring the width of %s: %v", url, err)
	}
	overlaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](overlapJS))
	if err != nil {
		t.Fatalf("measuring the chart labels of %s: %v", url, err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("a screenshot of %s (deadline %v a page): %v", url, pageTimeout, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return visited{figures: figs, shot: shot, console: slices.Clone(b.console), requests: slices.Clone(b.requests),
		overflows: overflows, overlaps: overlaps, scrolled: scrolled, heading: heading, url: url}
}

// pixels measures an image: the share of pixels that are not white, and
// how many colours it has (to 4 bits a channel, so that anti-aliasing does
// not count).
func pixels(img image.Image) (ink float64, colours int) {
	b := img.Bounds()
	seen := map[[3]uint32]bool{}
	var n, dark int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				dark++
			}
			seen[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
		}
	}
	return float64(dark) / float64(n), len(seen)
}

// hasColour reports whether at least a small block's worth of pixels have
// exactly colour c: a bar, not a stray pixel.
func hasColour(img image.Image, c color.RGBA) bool {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) == c {
				if n++; n >= 100 {
					return true
				}
			}
		}
	}
	return false
}
