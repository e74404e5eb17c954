package web_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scout-discovery/scout/internal/peer"
)

// Bounds of one browser test.
const (
	// browserTimeout bounds everything one test does in the browser: about
	// 10 s alone, twice that on a loaded 2-core machine, so a hang fails
	// the test well before go test's own timeout.
	browserTimeout = 90 * time.Second
	// desktopWidth, desktopHeight and phoneWidth are the window sizes the
	// page is tested at (390 px: a current phone's CSS width).
	desktopWidth, desktopHeight = 1280, 900
	phoneWidth, phoneHeight     = 390, 844
)

// Chromium is Debian's chromium, which .ci/run installs.
const Chromium = "chromium"

// newBrowser starts a headless Chromium for the test (skipped without it,
// failed in CI) and returns a tab's context, bounded by browserTimeout.
// Exceptions and console errors on the page fail the test.
func newBrowser(t *testing.T, width, height int) context.Context {
	t.Helper()
	bin := peer.Need(t, Chromium, "apt-get install chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.WindowSize(width, height),
		chromedp.Flag("no-sandbox", os.Geteuid() == 0), // Chromium refuses to run as root with its sandbox
		chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The first call starts the browser for the life of ctx (no timeout on
	// it, as chromedp asks); later calls take the bounded child.
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		acancel()
		t.Fatalf("starting %s: %v", bin, err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				t.Errorf("page console: %s (%s:%d)", m.String(), m.URL, m.Line+1)
			}
		}
	}()
	tctx, tcancel := context.WithTimeout(ctx, browserTimeout)
	t.Cleanup(func() {
		tcancel()
		cancel()
		acancel()
		<-done
	})
	return tctx
}

// do runs actions in the browser and fails the test on an error.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// poll waits until the JavaScript expression is truthy.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(browserTimeout))
}

// rowAddresses reads the addresses of the table's rows, in page order.
func rowAddresses(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return eval[[]string](t, ctx, `[...document.querySelectorAll("#servers tbody tr")].map(r => r.dataset.address)`)
}

// ShotsEnv names the environment variable that chooses where the browser
// tests write their screenshots; unset, they go to the test's temporary
// directory.
const ShotsEnv = "SCOUT_WEB_SHOTS"

// screenshot writes a PNG of the whole page (full) or of the window to
// name in $SCOUT_WEB_SHOTS or the test's temporary directory, and returns
// its path.
func screenshot(t *testing.T, ctx context.Context, name string, full bool) string {
	t.Helper()
	dir := os.Getenv(ShotsEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if len(png) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
