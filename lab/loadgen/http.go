package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// DefaultHTTPDuration is an HTTP run's default length.
const DefaultHTTPDuration = 10 * time.Second

// HTTPConfig describes one HTTP load run: Clients connections (kept
// alive), each asking the URLs in turn, closed-loop (a request as soon as
// the previous answer has been read), for Duration.
type HTTPConfig struct {
	URLs []string // asked in turn; required
	// Conditional sends each URL's ETag (from a first, unmeasured request)
	// in If-None-Match: a tracker polling an unchanged list.
	Conditional bool
	// Gzip asks for gzip (Accept-Encoding), as browsers and trackers do;
	// bodies are counted, not decoded.
	Gzip     bool
	Clients  int           // default 8
	Duration time.Duration // default DefaultHTTPDuration
	// Rate, when positive, makes the run open-loop: requests per second
	// in all, each client sending at Rate/Clients on its own schedule
	// (a request due while the client waits for an answer goes when the
	// answer is in: a slow server is asked less, and Late counts it).
	Rate float64
}

// HTTPResult is what one HTTP run measured.
type HTTPResult struct {
	Elapsed     time.Duration `json:"elapsed_ns"`
	Requests    int           `json:"requests"`
	OK          int           `json:"ok"`           // 200
	NotModified int           `json:"not_modified"` // 304
	Other       int           `json:"other"`        // any other status
	Errors      int           `json:"errors"`       // no answer (connection errors)
	Late        int           `json:"late"`         // open loop: requests sent after their due time
	Bytes       int64         `json:"bytes"`        // body bytes read
	LatencyP50  time.Duration `json:"latency_p50_ns"`
	LatencyP99  time.Duration `json:"latency_p99_ns"`
}

// PerSecond is requests answered (200 or 304) per second of the run.
func (r HTTPResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK+r.NotModified) / r.Elapsed.Seconds()
}

// HTTPRun runs cfg. It returns early, with what it measured, when ctx ends.
func HTTPRun(ctx context.Context, cfg HTTPConfig) (HTTPResult, error) {
	if len(cfg.URLs) == 0 {
		return HTTPResult{}, errors.New("loadgen: no URL")
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultHTTPDuration
	}
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: cfg.Clients, MaxConnsPerHost: cfg.Clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	do := func(url, etag string) (status int, etagOut string, n int64, err error) {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return 0, "", 0, err
		}
		if cfg.Gzip {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", 0, err
		}
		n, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("ETag"), n, err
	}
	etags := make([]string, len(cfg.URLs))
	if cfg.Conditional {
		for i, u := range cfg.URLs {
			st, et, _, err := do(u, "")
			if err != nil || st != 200 || et == "" {
				return HTTPResult{}, fmt.Errorf("loadgen: %s: status %d, ETag %q, %v", u, st, et, err)
			}
			etags[i] = et
		}
	}
	var (
		mu  sync.Mutex
		res HTTPResult
		lat []time.Duration
		wg  sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(cfg.Duration)
	for c := range cfg.Clients {
		wg.Go(func() {
			var my HTTPResult
			var myLat []time.Duration
			var every time.Duration
			next := start
			if cfg.Rate > 0 {
				every = time.Duration(float64(cfg.Clients) / cfg.Rate * float64(time.Second))
				next = start.Add(every * time.Duration(c) / time.Duration(cfg.Clients))
			}
			for i := c; time.Now().Before(end) && ctx.Err() == nil; i++ {
				k := i % len(cfg.URLs)
				if every > 0 {
					if wait := time.Until(next); wait > 0 {
						time.Sleep(wait)
					} else if wait < -time.Millisecond {
						my.Late++
					}
					next = next.Add(every)
					if !next.Before(end) {
						break
					}
				}
				t := time.Now()
				st, _, n, err := do(cfg.URLs[k], etags[k])
				d := time.Since(t)
				my.Requests++
				my.Bytes += n
				switch {
				case err != nil:
					my.Errors++
					continue
				case st == 200:
					my.OK++
				case st == 304:
					my.NotModified++
				default:
					my.Other++
				}
				myLat = append(myLat, d)
			}
			mu.Lock()
			res.Requests += my.Requests
			res.OK += my.OK
			res.NotModified += my.NotModified
			res.Other += my.Other
			res.Errors += my.Errors
			res.Late += my.Late
			res.Bytes += my.Bytes
			lat = append(lat, myLat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if len(lat) > 0 {
		slices.Sort(lat)
		res.LatencyP50 = lat[len(lat)/2]
		res.LatencyP99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return res, nil
}
