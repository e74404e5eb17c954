package mesh

import (
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
)

func dataDir(t *testing.T) string { return peer.SharedData(t, WonderProxyPings) }

func TestLoadWonderProxy_RealMesh(t *testing.T) {
	m, err := LoadWonderProxy(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Cities) != 246 {
		t.Errorf("%d cities, the file has 246", len(m.Cities))
	}
	mel, zur := m.Index("Melbourne"), m.Index("zurich")
	if mel < 0 || zur < 0 {
		t.Fatalf("Melbourne %d, Zurich %d", mel, zur)
	}
	// WonderProxy measured Melbourne-Zurich at about 264 ms (both ways).
	if r := m.RTT(mel, zur); r < 240 || r > 290 || r != m.RTT(zur, mel) {
		t.Errorf("Melbourne-Zurich %v / %v ms", r, m.RTT(zur, mel))
	}
	measured := 0
	for i := range m.Len() {
		for j := range m.Len() {
			if !math.IsNaN(m.RTT(i, j)) {
				measured++
			}
		}
	}
	if share := float64(measured) / float64(m.Len()*m.Len()); share < 0.95 {
		t.Errorf("%.3f of the pairs measured", share)
	}
}

func TestLoadRIPE_RealMatrix(t *testing.T) {
	c, err := LoadRIPE(dataDir(t))
	if err != nil {
		t.Fatal(err)
	}
	au, de := c.Index("AU"), c.Index("DE")
	if au < 0 || de < 0 {
		t.Fatal("AU or DE missing")
	}
	if r := c.RTT(au, de); r < 200 || r > 400 {
		t.Errorf("AU-DE mean %v ms", r)
	}
	if c.Index("None") >= 0 || c.Index("Unknown") >= 0 {
		t.Error("pseudo-countries kept")
	}
}

func writeFiles(t testing.TB, cities, pings string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, WonderProxyCities), []byte(cities), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, WonderProxyPings))
	if err != nil {
		t.Fatal(err)
	}
	z := gzip.NewWriter(f)
	z.Write([]byte(pings))
	z.Close()
	f.Close()
	return dir
}

const citiesHeader = "id,name,country,iso2,continent,latitude,longitude\n"

func TestLoadWonderProxy_BothDirectionsAveraged(t *testing.T) {
	dir := writeFiles(t, citiesHeader+"1,A,X,AA,1,0,0\n2,B,Y,BB,1,1,1\n3,C,Z,CC,1,2,2\n",
		"source,destination,min,avg,max,mdev\n1,2,0,10,0,0\n2,1,0,20,0,0\n1,3,0,7,0,0\n1,1,0,1,0,0\n9,1,0,5,0,0\n")
	m, err := LoadWonderProxy(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := m.RTT(0, 1); r != 15 {
		t.Errorf("A-B %v, want the mean of 10 and 20", r)
	}
	if r := m.RTT(2, 0); r != 7 {
		t.Errorf("C-A %v, want the one direction measured", r)
	}
	if r := m.RTT(1, 2); !math.IsNaN(r) {
		t.Errorf("B-C %v, want NaN (never measured)", r)
	}
	if r := m.RTT(0, 0); r != 0 {
		t.Errorf("A-A %v", r)
	}
}

func TestLoadWonderProxy_BadRowsAreErrors(t *testing.T) {
	for name, files := range map[string][2]string{
		"bad id":       {citiesHeader + "x,A,X,AA,1,0,0\n", "source,destination,avg\n"},
		"duplicate id": {citiesHeader + "1,A,X,AA,1,0,0\n1,B,X,AA,1,0,0\n", "source,destination,avg\n"},
		"no column":    {"id,name\n1,A\n", "source,destination,avg\n"},
		"negative RTT": {citiesHeader + "1,A,X,AA,1,0,0\n2,B,X,AA,1,0,0\n", "source,destination,avg\n1,2,-3\n"},
		"NaN RTT":      {citiesHeader + "1,A,X,AA,1,0,0\n2,B,X,AA,1,0,0\n", "source,destination,avg\n1,2,NaN\n"},
		"ragged":       {citiesHeader + "1,A,X\n", "source,destination,avg\n"},
		"empty pings":  {citiesHeader + "1,A,X,AA,1,0,0\n", ""},
	} {
		if _, err := LoadWonderProxy(writeFiles(t, files[0], files[1])); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := LoadWonderProxy(t.TempDir()); err == nil {
		t.Error("missing files: no error")
	}
}

// FuzzLoadWonderProxy: any file contents give a mesh or an error, never a
// panic, and a mesh's matrix is symmetric with a zero diagonal.
func FuzzLoadWonderProxy(f *testing.F) {
	f.Add(citiesHeader+"1,A,X,AA,1,0,0\n2,B,Y,BB,1,1,1\n", "source,destination,min,avg,max,mdev\n1,2,0,10,0,0\n")
	f.Add(citiesHeader, "source,destination,avg\n1,1,1e308\n")
	f.Fuzz(func(t *testing.T, cities, pings string) {
		m, err := LoadWonderProxy(writeFiles(t, cities, pings))
		if err != nil {
			return
		}
		for i := range m.Len() {
			if m.RTT(i, i) != 0 {
				t.Fatalf("diagonal %v", m.RTT(i, i))
			}
			for j := range m.Len() {
				a, b := m.RTT(i, j), m.RTT(j, i)
				if a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
					t.Fatalf("asymmetric %v %v", a, b)
				}
			}
		}
	})
}
