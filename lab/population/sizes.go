package population

// The paper's world sizes, estimated from its timings (Table 2 and section
// 4): an ET client sent 396 initial probes in about 10 s of a 70 s full
// probe (about 2,800 servers), a CS:S client 2,136 in just under 20 s of a
// 200 s full probe (about 22,000; the CS:S trial of Figure 3 created about
// 25,000 NAT entries, master queries and retries included).
const (
	SizeET  = 2800
	SizeCSS = 22000
	// MaxServers bounds a world's size.
	MaxServers = 50000
)
