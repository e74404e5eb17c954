// Package population builds worlds of game servers from real data, for the
// simulator (package sim) and the emulated world: N servers of a game, each
// with a public IPv4 address and port, its country, its origin AS and the
// city it sits in, in the order a master server would list them, and the
// round-trip time a client at a given place sees to each.
//
// # Where servers sit
//
// Game servers are not spread evenly over a country's address space: a few
// hosting networks per country carry most of them, and inside a network a
// few /16s. Build reproduces that from real tables and real populations:
//
//   - countries: a Zipf law over a ranking of countries taken from two real
//     server lists (SCUM's master list of 2024 and the QuakeWorld list),
//     completed by routed address space in 2008; its exponent and support are
//     fitted so that worlds of the paper's sizes hold the paper's country
//     counts (Table 2: about 51 for ET, 70 for CS:S);
//   - networks: each country's servers go to cAS*n^bAS of its origin ASes in
//     the RouteViews table of 2008-05-01, Zipf-distributed; each AS's to
//     c16*n^b16 of its announced prefixes (one /16 each), Zipf-distributed;
//     and a few game ports share an address. These laws are fitted to the
//     real lists (Measure gives their statistics; the measured values are in
//     serverlists_gen.go);
//   - calibration (calibrated.go): Fitted departs from the modern lists
//     where the paper's Table 2 says its 2007 population differed: more
//     ASes per country and /16s per AS, Australia ranked 10th, and big ASes
//     in hosting hubs; Modern returns the lists' fit alone;
//   - prefixes: data/prefixes2008.tsv.gz, every /8 to /24 prefix announced
//     on 2008-05-01 with its origin AS (pyasn, MIT; RouteViews, public) and
//     its country in MaxMind's GeoLite Country of 2019-12-24 (redistributed
//     under its licence with MaxMind's notice, see NOTICE).
//
// # Latency
//
// Each AS of a country sits in one of the country's WonderProxy cities
// (coordinates are facts, in package latency). The RTT from a Place to a server is
//
//	access + (a + b*km*f(regions)) * exp(e_city) + d_AS + d_/16
//
// with a, b, the region-pair factors f and the spread of e fitted to the
// WonderProxy city-to-city matrix of July 2020 (the matrix carries no
// licence and is not shipped; the fitted constants are: a, b and f in
// package latency, the spread of e in latency_gen.go), d_AS and d_/16
// exponential offsets (so that splitting a cluster by /16 has something to
// find) and access the client's constant access delay. Each probe adds
// jitter (Jitter) fitted to the matrix's per-ping spread. e_city is drawn
// from the fit over all city pairs (DefaultLatency, Fitted), or from the
// fit over the client city's own paths to the server's region
// (VantageLatency, FittedVantage; calibrated.go gives the evidence).
//
// World.MeshRTTs is the measured mode: the city-to-city part is a real
// mesh given at run time (MeshLatency) instead of the fitted model, plus
// the same server-side offsets, drawn once per server so that every
// requester (client or landmark) sees them.
//
// Every value is deterministic for a seed. The generator,
// internal/gen, refits everything from ../shared/data:
//
//	go run ./lab/population/internal/gen -data ../shared/data
package population
