package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// strategyAccs gathers an accumulator per client and strategy: the
// clients in the order first seen, the strategies in the order of the
// first client's.
type strategyAccs[A any] struct {
	clients, names []string
	accs           map[string]map[string]*A
	fresh          func() *A // a new accumulator; nil for the zero value
}

// client notes client c.
func (s *strategyAccs[A]) client(c string) {
	if s.accs == nil {
		s.accs = map[string]map[string]*A{}
	}
	if s.accs[c] == nil {
		s.clients = append(s.clients, c)
		s.accs[c] = map[string]*A{}
	}
}

// get returns client c's accumulator of strategy name, made on first
// use; c must have been noted by client.
func (s *strategyAccs[A]) get(c, name string) *A {
	a := s.accs[c][name]
	if a == nil {
		if s.fresh != nil {
			a = s.fresh()
		} else {
			a = new(A)
		}
		s.accs[c][name] = a
		if len(s.clients) == 1 {
			s.names = append(s.names, name)
		}
	}
	return a
}

// strategyTable starts a table of a row per client: its header names
// the client's column, the columns of before (each ending in a tab) and
// a column per strategy of names.
func strategyTable(w io.Writer, before string, names []string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "client\t"+before)
	for _, nm := range names {
		fmt.Fprintf(tw, "%s\t", nm)
	}
	fmt.Fprintln(tw)
	return tw
}
