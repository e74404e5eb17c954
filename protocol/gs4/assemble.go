package gs4

import (
	"fmt"
	"slices"
)

// Info is a whole info reply: the sections of all its packets joined.
type Info struct {
	SessionID uint32 `json:"session_id"`
	// Rules are the server key/values in wire order (packet by packet).
	Rules []KeyValue `json:"rules"`
	// Players and Teams are the tables; a row is one player or team.
	Players Table `json:"players"`
	Teams   Table `json:"teams"`
}

// Table is a player or team table.
type Table struct {
	// Fields are the field names as sent ("player_", "score_", ...), in
	// order of first appearance.
	Fields []string `json:"fields"`
	// Rows[i][j] is row i's value of Fields[j]; "" when the server sent
	// none.
	Rows [][]string `json:"rows"`
}

// Column returns the values of one field, one per row, or nil if the table
// has no such field.
func (t Table) Column(field string) []string {
	j := slices.Index(t.Fields, field)
	if j < 0 {
		return nil
	}
	out := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = r[j]
	}
	return out
}

// Rule returns the value of the first pair with the given key.
func (i Info) Rule(key string) (string, bool) {
	for _, kv := range i.Rules {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// PlayerNames returns the player names: the "player_" column, or "name_"
// (qstat accepts both).
func (i Info) PlayerNames() []string {
	if c := i.Players.Column("player_"); c != nil {
		return c
	}
	return i.Players.Column("name_")
}

// Assemble joins the packets of one reply. Packets may come in any order;
// exact duplicates are dropped. It fails with [ErrTooManyPackets] beyond
// [MaxPackets], [ErrMismatch] when packets disagree, and a [*MissingError]
// (wrapping [ErrIncomplete]) when packets are missing.
func Assemble(packets []InfoPacket) (Info, error) {
	var r Reassembler
	for _, p := range packets {
		if _, err := r.Add(p); err != nil {
			return Info{}, err
		}
	}
	return r.Info()
}

// MissingError reports the packet numbers a split reply still lacks.
type MissingError struct {
	// Numbers of the missing packets, ascending. When no packet marked last
	// has arrived, the count is unknown and Numbers lists only the gaps
	// below the highest number seen, with LastUnknown set.
	Numbers     []int
	LastUnknown bool
}

func (e *MissingError) Error() string {
	if e.LastUnknown {
		return fmt.Sprintf("gs4: split reply incomplete: missing packets %v and the last packet", e.Numbers)
	}
	return fmt.Sprintf("gs4: split reply incomplete: missing packets %v", e.Numbers)
}

// Unwrap makes errors.Is(err, ErrIncomplete) hold.
func (e *MissingError) Unwrap() error { return ErrIncomplete }

// Reassembler collects the packets of one split reply. The zero value is
// ready to use. It is not safe for concurrent use.
type Reassembler struct {
	packets [MaxPackets]*InfoPacket
	count   int
	hasLast bool // the packet marked last has arrived
	last    int  // its number, when hasLast
}

// Add stores one packet and reports whether the reply is now complete.
// A duplicate of a stored packet is ignored; a different packet with the
// same number, another session id, or a second last packet is
// [ErrMismatch]; a number at or beyond [MaxPackets] is [ErrTooManyPackets].
func (r *Reassembler) Add(p InfoPacket) (complete bool, err error) {
	if int(p.Number) >= MaxPackets {
		return false, fmt.Errorf("%w: packet number %d, limit %d", ErrTooManyPackets, p.Number, MaxPackets)
	}
	if first := r.any(); first != nil && first.SessionID != p.SessionID {
		return false, fmt.Errorf("%w: session id %#08x, reply has %#08x", ErrMismatch, p.SessionID, first.SessionID)
	}
	if old := r.packets[p.Number]; old != nil {
		if !equalPackets(*old, p) {
			return false, fmt.Errorf("%w: two different packets numbered %d", ErrMismatch, p.Number)
		}
		return r.complete(), nil
	}
	if p.Last {
		if r.hasLast {
			return false, fmt.Errorf("%w: packets %d and %d both marked last", ErrMismatch, r.last, p.Number)
		}
		for n := int(p.Number) + 1; n < MaxPackets; n++ {
			if r.packets[n] != nil {
				return false, fmt.Errorf("%w: packet %d arrived beyond last packet %d", ErrMismatch, n, p.Number)
			}
		}
		r.hasLast, r.last = true, int(p.Number)
	} else if r.hasLast && int(p.Number) > r.last {
		return false, fmt.Errorf("%w: packet %d beyond last packet %d", ErrMismatch, p.Number, r.last)
	}
	p.Sections = slices.Clone(p.Sections)
	r.packets[p.Number] = &p
	r.count++
	return r.complete(), nil
}

func (r *Reassembler) any() *InfoPacket {
	for _, p := range r.packets {
		if p != nil {
			return p
		}
	}
	return nil
}

func (r *Reassembler) complete() bool { return r.hasLast && r.count == r.last+1 }

// Missing returns the error describing what is still missing, or nil when
// the reply is complete.
func (r *Reassembler) Missing() error {
	if r.complete() {
		return nil
	}
	e := &MissingError{LastUnknown: !r.hasLast}
	top := r.last
	if !r.hasLast {
		top = 0
		for n := MaxPackets - 1; n >= 0; n-- {
			if r.packets[n] != nil {
				top = n
				break
			}
		}
	}
	for n := 0; n < top; n++ {
		if r.packets[n] == nil {
			e.Numbers = append(e.Numbers, n)
		}
	}
	return e
}

// Info joins the collected packets in number order. It fails with a
// [*MissingError] until the reply is complete, and with [ErrTooManyRows]
// when a table would exceed [MaxRows].
func (r *Reassembler) Info() (Info, error) {
	if err := r.Missing(); err != nil {
		return Info{}, err
	}
	var out Info
	for _, p := range r.packets[:r.last+1] {
		out.SessionID = p.SessionID
		for _, s := range p.Sections {
			var err error
			switch s.Kind {
			case SectionServer:
				out.Rules = append(out.Rules, s.Rules...)
			case SectionPlayers:
				err = out.Players.add(s.Columns)
			case SectionTeams:
				err = out.Teams.add(s.Columns)
			default:
				err = fmt.Errorf("%w: kind %#02x", ErrBadSection, uint8(s.Kind))
			}
			if err != nil {
				return Info{}, fmt.Errorf("packet %d: %w", p.Number, err)
			}
		}
	}
	return out, nil
}

// add places each column's values at rows Offset, Offset+1, ...
func (t *Table) add(cols []Column) error {
	for _, c := range cols {
		end := int(c.Offset) + len(c.Values)
		if end > MaxRows {
			return fmt.Errorf("%w: field %q reaches row %d, limit %d", ErrTooManyRows, c.Field, end, MaxRows)
		}
		j := slices.Index(t.Fields, c.Field)
		if j < 0 {
			j = len(t.Fields)
			t.Fields = append(t.Fields, c.Field)
			for i := range t.Rows {
				t.Rows[i] = append(t.Rows[i], "")
			}
		}
		for len(t.Rows) < end {
			t.Rows = append(t.Rows, make([]string, len(t.Fields)))
		}
		for k, v := range c.Values {
			t.Rows[int(c.Offset)+k][j] = v
		}
	}
	return nil
}

func equalPackets(a, b InfoPacket) bool {
	if a.SessionID != b.SessionID || a.Number != b.Number || a.Last != b.Last || len(a.Sections) != len(b.Sections) {
		return false
	}
	for i := range a.Sections {
		x, y := a.Sections[i], b.Sections[i]
		if x.Kind != y.Kind || !slices.Equal(x.Rules, y.Rules) ||
			!slices.EqualFunc(x.Columns, y.Columns, func(c, d Column) bool {
				return c.Field == d.Field && c.Offset == d.Offset && slices.Equal(c.Values, d.Values)
			}) {
			return false
		}
	}
	return true
}

// Split builds the packets of a reply to session: the server key/values in
// packet 0 (gamedig reads them only there), then the player and team
// tables, starting a new packet whenever the next whole section would take
// a packet past maxSize bytes. Tables too big for one packet are split
// between rows, the continuation carrying Column.Offset. It fails if one
// section of key/values, or one table row, cannot fit.
func (i Info) Split(maxSize int) ([]InfoPacket, error) {
	var sections []Section
	if len(i.Rules) > 0 {
		sections = append(sections, Section{Kind: SectionServer, Rules: i.Rules})
	}
	for _, t := range []struct {
		kind  SectionKind
		table Table
	}{{SectionPlayers, i.Players}, {SectionTeams, i.Teams}} {
		if err := t.table.check(); err != nil {
			return nil, err
		}
		if len(t.table.Fields) > 0 {
			sections = append(sections, t.table.section(t.kind, 0, len(t.table.Rows)))
		}
	}
	var out []InfoPacket
	cur := InfoPacket{SessionID: i.SessionID}
	size := func(p InfoPacket) int {
		b, err := p.AppendBinary(nil)
		if err != nil {
			return maxSize + 1
		}
		return len(b)
	}
	flush := func() error {
		if len(out) >= MaxPackets-1 {
			return fmt.Errorf("%w: reply needs more than %d packets of %d bytes", ErrTooManyPackets, MaxPackets, maxSize)
		}
		out = append(out, cur)
		cur = InfoPacket{SessionID: i.SessionID, Number: uint8(len(out))}
		return nil
	}
	for _, s := range sections {
		trial := cur
		trial.Sections = append(slices.Clone(cur.Sections), s)
		if size(trial) <= maxSize {
			cur = trial
			continue
		}
		if len(cur.Sections) > 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			trial = cur
			trial.Sections = []Section{s}
			if size(trial) <= maxSize {
				cur = trial
				continue
			}
		}
		if s.Kind == SectionServer {
			return nil, fmt.Errorf("%w: server key/values do not fit in %d bytes", ErrBadField, maxSize)
		}
		// Split the table between rows.
		t := i.Players
		if s.Kind == SectionTeams {
			t = i.Teams
		}
		for row := 0; row < len(t.Rows); {
			n := 0
			for row+n < len(t.Rows) {
				trial = cur
				trial.Sections = append(slices.Clone(cur.Sections), t.section(s.Kind, row, row+n+1))
				if size(trial) > maxSize {
					break
				}
				n++
			}
			if n == 0 {
				if len(cur.Sections) == 0 {
					return nil, fmt.Errorf("%w: %v row %d does not fit in %d bytes", ErrBadField, s.Kind, row, maxSize)
				}
				if err := flush(); err != nil {
					return nil, err
				}
				continue
			}
			cur.Sections = append(cur.Sections, t.section(s.Kind, row, row+n))
			row += n
		}
	}
	cur.Last = true
	out = append(out, cur)
	return out, nil
}

// check validates that the table is rectangular, small enough, and that
// no row has a hole (an empty value would end the column early).
func (t Table) check() error {
	if len(t.Rows) > MaxRows {
		return fmt.Errorf("%w: %d rows, limit %d", ErrTooManyRows, len(t.Rows), MaxRows)
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Fields) {
			return fmt.Errorf("%w: row %d has %d values for %d fields", ErrBadField, i, len(r), len(t.Fields))
		}
		for j, v := range r {
			if v == "" {
				return fmt.Errorf("%w: row %d field %q is empty", ErrBadField, i, t.Fields[j])
			}
		}
	}
	return nil
}

// section returns rows [from, to) as a section of the given kind.
func (t Table) section(kind SectionKind, from, to int) Section {
	s := Section{Kind: kind}
	for j, f := range t.Fields {
		c := Column{Field: f, Offset: uint8(from)}
		for _, r := range t.Rows[from:to] {
			c.Values = append(c.Values, r[j])
		}
		s.Columns = append(s.Columns, c)
	}
	return s
}
