package masterd

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/scout-discovery/scout/master/upstream"
)

// The shell of aggregation: the handler sends and reads the upstream
// masters' queries on the master's own sockets (master's
// handler_upstream.go); scout peers are fetched here, over HTTP, and
// handed to the handler. Every fetch is bounded in time (the aggregator's
// MaxListTime) and in bytes (MaxPeerBytes, after gzip).

// randomSeed returns a seed for the upstream refreshes' jitter.
func randomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// fetchPeers fetches, every interval until ctx ends, the peer lists the
// handler asks for, one goroutine per fetch (the aggregator asks for a
// peer again only after the last fetch's answer).
func (m *Master) fetchPeers(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fs := m.Handler.TakeFetches()
		if len(fs) == 0 {
			continue
		}
		cfg := m.Handler.Config().Aggregate.WithDefaults()
		for _, f := range fs {
			wg.Go(func() {
				start := time.Now()
				list, err := FetchPeerList(ctx, f.URL, cfg.MaxListTime, int64(cfg.MaxPeerBytes), cfg.MaxLearned)
				if err != nil {
					m.Log.Warn("fetching a peer's list", "peer", f.URL, "err", err)
				}
				m.Handler.Offer(time.Now(), f.Source, list, time.Since(start), err)
			})
		}
	}
}

// peerClient fetches peer lists: no redirects (a peer names its own
// address), gzip decoded by the transport.
var peerClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// FetchPeerList fetches the verified list of the scout master at base
// (its HTTP address, "http://host:8080") within timeout, reading at most
// maxBytes of body (decompressed), and returns at most maxServers of its
// servers.
func FetchPeerList(ctx context.Context, base string, timeout time.Duration, maxBytes int64, maxServers int) ([]upstream.PeerServer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+upstream.PeerPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "scout-master")
	resp, err := peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", req.URL, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%s: a list larger than %d bytes", req.URL, maxBytes)
	}
	list, _, err := upstream.ParsePeerList(b, maxServers)
	if err != nil {
		return nil, err
	}
	return list, nil
}
