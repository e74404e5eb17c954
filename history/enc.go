package history

import "encoding/binary"

// A series is one server's days in History, oldest first, in one byte
// slice. Each day is
//
//	its day number: for the first day a varint (encoding/binary's signed
//	  one), for each next day a uvarint of the difference from the one
//	  before (at least 1)
//	the uvarint length of its body, then the body: the day's counts from
//	  slot 0 to its last sample (the slots after it are NoSample), in
//	  segments:
//	    uvarint n<<1, then one count: n slots of that count (n >= minRun)
//	    uvarint n<<1 | 1, then n counts: n slots as they are
//
// The encoder makes a run of every minRun or more equal counts and keeps
// the rest as they are, so that
//
//   - a day of one count, or of NoSample then one count (a server nobody
//     plays on: most of them), takes 5 to 9 bytes;
//   - a day whose count changes at most c times takes at most about 3
//     bytes per change (2 for the run, 1 for a count kept as it is);
//   - a day whose count changes at every slot (the worst case) takes at
//     most its SlotsPerDay counts plus 2 bytes of segment header (every
//     run saves at least 2 bytes, at least the header of the segment of
//     counts kept as they are that follows it), plus at most 3 bytes of
//     day number and 2 of length: 295 bytes, against 292 for a raw day.
//
// parseDays and decodeBody never read past what they are given, whatever
// the bytes (FuzzHistoryDecode); History only decodes what it encoded.
const minRun = 4

// maxBody bounds a day's body: its counts and the first segment's header.
const maxBody = SlotsPerDay + 2

// dayRef is one day of a parsed series: its number and its encoded body.
type dayRef struct {
	day  int32
	body []byte
}

// parseDays appends enc's days, oldest first, to refs (each body aliasing
// enc) and returns it. It stops at the first day that does not parse.
func parseDays(enc []byte, refs []dayRef) []dayRef {
	var day int64
	for p := 0; p < len(enc); {
		var n int
		if len(refs) == 0 {
			day, n = binary.Varint(enc[p:])
		} else {
			var d uint64
			d, n = binary.Uvarint(enc[p:])
			day += int64(d)
		}
		if n <= 0 {
			break
		}
		p += n
		l, n := binary.Uvarint(enc[p:])
		if n <= 0 || l > uint64(len(enc)-p-n) {
			break
		}
		p += n
		refs = append(refs, dayRef{day: int32(day), body: enc[p : p+int(l) : p+int(l)]})
		p += int(l)
	}
	return refs
}

// appendSeries appends the encoding of days (ascending, distinct) to dst.
func appendSeries(dst []byte, days []dayRef) []byte {
	for i, d := range days {
		if i == 0 {
			dst = binary.AppendVarint(dst, int64(d.day))
		} else {
			dst = binary.AppendUvarint(dst, uint64(d.day-days[i-1].day))
		}
		dst = binary.AppendUvarint(dst, uint64(len(d.body)))
		dst = append(dst, d.body...)
	}
	return dst
}

// decodeBody sets counts to the day body encodes. Slots past what it
// encodes are NoSample.
func decodeBody(body []byte, counts *[SlotsPerDay]uint8) {
	i := 0
	for p := 0; p < len(body) && i < SlotsPerDay; {
		h, n := binary.Uvarint(body[p:])
		if n <= 0 {
			break
		}
		p += n
		m := int(min(h>>1, uint64(SlotsPerDay-i)))
		if h&1 == 1 {
			m = min(m, len(body)-p)
			copy(counts[i:i+m], body[p:])
			p += m
		} else {
			if p >= len(body) {
				break
			}
			c := body[p]
			p++
			for j := i; j < i+m; j++ {
				counts[j] = c
			}
		}
		i += m
	}
	for ; i < SlotsPerDay; i++ {
		counts[i] = NoSample
	}
}

// appendBody appends the body encoding counts to dst.
func appendBody(dst []byte, counts *[SlotsPerDay]uint8) []byte {
	end := SlotsPerDay
	for end > 0 && counts[end-1] == NoSample {
		end--
	}
	lit := 0 // the first count not yet written
	for i := 0; i < end; {
		j := i + 1
		for j < end && counts[j] == counts[i] {
			j++
		}
		if j-i >= minRun {
			dst = appendCounts(dst, counts[lit:i])
			dst = binary.AppendUvarint(dst, uint64(j-i)<<1)
			dst = append(dst, counts[i])
			lit = j
		}
		i = j
	}
	return appendCounts(dst, counts[lit:end])
}

// appendCounts appends a segment of counts kept as they are.
func appendCounts(dst, counts []byte) []byte {
	if len(counts) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(counts))<<1|1)
	return append(dst, counts...)
}
