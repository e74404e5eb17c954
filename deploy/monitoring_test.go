package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/scout-discovery/scout/internal/masterproc"
	"github.com/scout-discovery/scout/internal/peer"
)

// TestPrometheus_RulesCheck runs promtool check rules on the alerting rules,
// and promtool test rules on their unit tests (series fed in, alerts
// expected out).
func TestPrometheus_RulesCheck(t *testing.T) {
	promtool := peer.Need(t, "promtool", "apt-get install prometheus")
	for _, args := range [][]string{
		{"check", "rules", "alerts.yaml"},
		{"test", "rules", "alerts_test.yaml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// series is what a master exports: each metric name with the label values
// seen for it.
type series map[string]map[string]map[string]bool // name -> label -> values

// TestMonitoring_NamesExist starts a master keeping a --state file and a
// fleet instance on a real redis-server, scrapes both /metrics, and checks
// that every metric the alerting rules and the dashboard's queries name is
// exported by one of them, and every label value they match on exists.
func TestMonitoring_NamesExist(t *testing.T) {
	redis := peer.Need(t, "redis-server", "apt-get install redis-server")
	bin := masterproc.Binary(t)
	have := series{}
	// "up" is the series Prometheus itself writes for every target.
	have["up"] = map[string]map[string]bool{}

	common := []string{"-l", "127.0.0.1", "-p", "0", "--motd-port", "0", "--http", "127.0.0.1:0"}
	solo := masterproc.Start(t, bin, append(common, "--state", filepath.Join(t.TempDir(), "m.db"))...)
	scrape(t, solo.Addr(t, "http"), have)

	port := peer.FreeTCPPort(t)
	rs := exec.Command(redis, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := rs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Process.Kill(); rs.Wait() })
	fleet := masterproc.Start(t, bin, append(common, "--store", fmt.Sprintf("redis://127.0.0.1:%d/0", port), "--fleet-id", "a")...)
	httpAddr := fleet.Addr(t, "http")
	scrape(t, httpAddr, have)

	exprs := map[string]string{}
	for name, e := range ruleExprs(t) {
		exprs["alerts.yaml "+name] = e
	}
	for name, e := range dashboardExprs(t) {
		exprs["scout.json "+name] = e
	}
	if len(exprs) < 30 {
		t.Fatalf("read only %d expressions", len(exprs))
	}
	for where, e := range exprs {
		for _, ref := range metricRefs(e) {
			labels, ok := have[ref.name]
			if !ok {
				t.Errorf("%s: %s is not exported by scout master", where, ref.name)
				continue
			}
			for label, value := range ref.matchers {
				if label == "job" || label == "instance" {
					continue // the scrape's labels, not the master's
				}
				if !labels[label][value] {
					t.Errorf("%s: %s{%s=%q} matches no series scout master exports", where, ref.name, label, value)
				}
			}
		}
	}
}

// scrape reads the text exposition at addr/metrics into have; a histogram
// contributes its _bucket, _sum and _count series.
func scrape(t *testing.T, addr fmt.Stringer, have series) {
	t.Helper()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	pair := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n++
		labels := have[m[1]]
		if labels == nil {
			labels = map[string]map[string]bool{}
			have[m[1]] = labels
		}
		for _, p := range pair.FindAllStringSubmatch(m[2], -1) {
			if labels[p[1]] == nil {
				labels[p[1]] = map[string]bool{}
			}
			labels[p[1]][p[2]] = true
		}
	}
	if n < 50 {
		t.Fatalf("%s/metrics: only %d series", addr, n)
	}
}

// ruleExprs returns each alert's expression, by alert name.
func ruleExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			m[r.Alert] = r.Expr
		}
	}
	return m
}

// dashboardExprs returns each panel target's query, by panel title, and the
// template variables' queries.
func dashboardExprs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("grafana/scout.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/scout.json: %v", err)
	}
	m := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			m[p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			m["$"+v.Name] = v.Definition
		}
	}
	return m
}

// ref is one metric a PromQL expression names, with its equality matchers.
type ref struct {
	name     string
	matchers map[string]string
}

var (
	// promqlWords are the functions, aggregations and keywords the rules and
	// the dashboard use: identifiers that are not metric names.
	promqlWords = map[string]bool{
		"sum": true, "min": true, "max": true, "avg": true, "count": true, "topk": true,
		"by": true, "without": true, "on": true, "ignoring": true, "and": true, "or": true,
		"unless": true, "offset": true, "rate": true, "increase": true, "irate": true,
		"max_over_time": true, "min_over_time": true, "histogram_quantile": true,
		"label_values": true, "le": true, "bool": true,
	}
	identRE   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})?`)
	matcherRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"`)
	durRE     = regexp.MustCompile(`\[[^\]]*\]`)
	groupRE   = regexp.MustCompile(`\b(by|on|without|ignoring)\s*\([^)]*\)`)
	offsetRE  = regexp.MustCompile(`\boffset\s+[0-9a-z]+`)
	// label_values(METRIC, LABEL): LABEL is a label name.
	labelValuesRE = regexp.MustCompile(`label_values\(([^,]*),\s*[a-zA-Z_]+\)`)
)

// metricRefs lists the metrics an expression selects. It is a scanner for
// the PromQL these files use, not a parser: grouping clauses and range
// durations are removed, then every identifier that is not a PromQL word
// or a template variable is a metric.
func metricRefs(expr string) []ref {
	e := durRE.ReplaceAllString(expr, "")
	e = offsetRE.ReplaceAllString(e, "")
	e = labelValuesRE.ReplaceAllString(e, "$1")
	e = groupRE.ReplaceAllString(e, "")
	e = regexp.MustCompile(`"[^"]*"`).ReplaceAllStringFunc(e, func(s string) string {
		return strings.NewReplacer("(", " ", ")", " ").Replace(s)
	})
	var refs []ref
	for _, m := range identRE.FindAllStringSubmatchIndex(e, -1) {
		word := e[m[0]:m[1]]
		name, sel, _ := strings.Cut(word, "{")
		if promqlWords[name] || (m[0] > 0 && strings.ContainsRune("$.0123456789", rune(e[m[0]-1]))) {
			continue
		}
		r := ref{name: name, matchers: map[string]string{}}
		for _, mm := range matcherRE.FindAllStringSubmatch(sel, -1) {
			r.matchers[mm[1]] = mm[2]
		}
		refs = append(refs, r)
	}
	return refs
}

func TestMetricRefs(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string
	}{
		{`scout_master_servers_listed == 0 and max_over_time(scout_master_servers_listed[1h] offset 15m) > 0`, "scout_master_servers_listed scout_master_servers_listed"},
		{`topk(10, sum by (reason) (rate(scout_master_dropped_total{job=~"$job", reason="rate_limited"}[$__rate_interval])) > 0)`, `scout_master_dropped_total{reason=rate_limited}`},
		{`histogram_quantile(0.99, sum by (le, instance) (rate(scout_fleet_redis_seconds_bucket[5m]))) > 0.25`, "scout_fleet_redis_seconds_bucket"},
		{`label_values(scout_master_servers_listed{job=~"$job"}, instance)`, "scout_master_servers_listed"},
		{`max by (job) (scout_fleet_instances) != min by (job) (scout_fleet_instances)`, "scout_fleet_instances scout_fleet_instances"},
		{`scout_master_no_such_thing > 1e3`, "scout_master_no_such_thing"},
	} {
		var got []string
		for _, r := range metricRefs(tc.expr) {
			s := r.name
			for k, v := range r.matchers {
				if k != "job" {
					s += "{" + k + "=" + v + "}"
				}
			}
			got = append(got, s)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("metricRefs(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}
