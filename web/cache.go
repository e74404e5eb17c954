package web

import (
	"bytes"
	"compress/gzip"
	"sync"
)

// Body cache bounds, per view: the encoded answers of one listing
// version. Beyond them an answer is encoded for its request and not kept.
// A view's cache dies with it (the next listing version starts empty), so
// the cache holds at most the answers of two views while requests still
// use the older one.
const (
	DefaultMaxCachedBodies = 512
	DefaultMaxCachedBytes  = 32 << 20
)

type cacheLimits struct {
	entries int
	bytes   int
}

// bodyCache holds encoded answers by key (the normalised query). Each
// entry is built once (sync.Once), whoever asks first; its gzip form is
// made on first demand.
//
// mu guards m and size.
type bodyCache struct {
	lim  cacheLimits
	mu   sync.Mutex
	m    map[string]*body
	size int
}

type body struct {
	once   sync.Once
	plain  []byte
	gzOnce sync.Once
	gz     []byte
	extra  any // what the builder returned with the body (e.g. an error)
}

func newBodyCache(lim cacheLimits) *bodyCache {
	return &bodyCache{lim: lim, m: map[string]*body{}}
}

// get returns the body under key, building it with build if absent; hit
// reports that it was there already.
func (c *bodyCache) get(key string, build func() ([]byte, any)) (b *body, hit bool) {
	c.mu.Lock()
	b, hit = c.m[key]
	if !hit {
		b = &body{}
		if len(c.m) < c.lim.entries && c.size < c.lim.bytes {
			c.m[key] = b
		}
	}
	c.mu.Unlock()
	b.once.Do(func() {
		b.plain, b.extra = build()
		c.mu.Lock()
		if c.m[key] == b {
			c.size += len(b.plain)
		}
		c.mu.Unlock()
	})
	return b, hit
}

// gzipped returns b's gzip encoding, made once.
func (c *bodyCache) gzipped(key string, b *body) []byte {
	b.gzOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
		zw.Write(b.plain)
		zw.Close()
		b.gz = buf.Bytes()
		c.mu.Lock()
		if c.m[key] == b {
			c.size += len(b.gz)
		}
		c.mu.Unlock()
	})
	return b.gz
}
