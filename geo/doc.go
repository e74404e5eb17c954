// Package geo tells the country and the autonomous system (AS) of an IP
// address, offline, for clustering game servers as adaptive discovery does
// (Armitage, NETWORKING 2008: by country, and by network prefix or AS).
//
//	info, ok := geo.Default().Lookup(netip.MustParseAddr("1.1.1.1"))
//	// info.Country "AU", info.ASN 13335, info.ASOrg "Cloudflare, Inc.",
//	// info.Prefix 1.1.1.0/24, ok true
//
// # Never geolocated
//
// Private, shared (CGNAT), loopback, link-local, multicast, documentation,
// benchmarking and otherwise reserved blocks, IPv4 and IPv6, are never
// geolocated, whatever the data says: see Reserved and ReservedPrefixes for
// the table. The generator leaves them out of the embedded data too.
//
// # Sources, in order of precedence
//
//   - MaxMind DB files the user gives to Open: GeoLite2 or GeoIP2 Country or
//     City for the country, ASN (or ISP) for the AS. Each takes precedence
//     for the fields it provides.
//   - The embedded database, data/scout-geo.mmdb (Default).
//
// Older tables, such as a RouteViews prefix-to-AS table of 2008 in pyasn's
// format (OpenPyASN) or an IP range-to-country CSV (OpenCountryCSV), can be
// read from files the caller passes and layered with Stack, for worlds of
// another era.
//
// # The embedded database
//
// data/scout-geo.mmdb (15,736,374 bytes, a MaxMind DB with GeoLite2-style
// keys: country.iso_code, autonomous_system_number,
// autonomous_system_organization) is generated from the CSV tables of two
// npm packages, pinned in internal/gen/package-lock.json:
//
//   - @ip-location-db/geo-whois-asn-country 2.3.2026061719 (IPv4 and IPv6
//     range to country), released under CC0-1.0 by sapics; built from RIR
//     WHOIS and delegation data of the Number Resource Organization (NRO,
//     nro.net), CC BY 4.0, and from published geofeeds.
//   - @ip-location-db/asn 2.3.2026061719 (IPv4 and IPv6 range to AS number
//     and organisation), CC BY 4.0: IP to AS Number data by RouteViews
//     (routeviews.org), the free IP to ASN Lite database by DB-IP
//     (https://db-ip.com, "IP Geolocation by DB-IP"), and RIR data of the
//     NRO (nro.net). Modified by sapics (merged; RouteViews first), and by
//     scout (reserved blocks removed, merged with the country table into
//     one MaxMind DB file).
//
// The upstream README of these versions warns that the data published to
// npm has known errors and that npm releases will stop in favour of GitHub
// releases (for example 2001:200::/32, WIDE in Japan, is given as AU in
// part). Country and AS are used as clustering hints, where such errors cost
// probe order, not correctness; a user's GeoLite2 files given to Open
// override them.
//
// Programs that show results from this data to people must carry this
// attribution, as the NOTICE file at the repository root does; in a web
// page DB-IP asks for a link to https://db-ip.com.
//
// To regenerate it (needs npm and the npm registry; the same package
// versions give the same bytes):
//
//	go generate ./geo
//
// which runs go run ./internal/gen: npm ci of the pinned packages into a
// temporary directory, then the MaxMind DB writer. To move to newer data,
// change the versions in internal/gen/package.json, run npm install there to
// update the lock file, regenerate, and update the versions above and in
// NOTICE.
package geo
