package deploy

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Services map[string]struct {
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Ports   []string `yaml:"ports"`
		Volumes []string `yaml:"volumes"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// TestCompose_FleetOnRedis parses compose.yaml and checks the fleet it
// describes: three scout masters, every option one scout master accepts,
// all on the same Redis service, each instance its own --fleet-id, the UDP
// ports published, and every named volume declared.
func TestCompose_FleetOnRedis(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	flags := masterFlags(t)
	masters, ids, stores := 0, map[string]bool{}, map[string]bool{}
	for name, s := range f.Services {
		for _, v := range s.Volumes {
			vol, _, _ := strings.Cut(v, ":")
			if _, ok := f.Volumes[vol]; !ok && !strings.HasPrefix(vol, "/") && !strings.HasPrefix(vol, ".") {
				t.Errorf("%s: volume %q is not declared", name, vol)
			}
		}
		if !strings.Contains(s.Image, "scout") {
			continue
		}
		masters++
		checkArgs(t, "compose.yaml service "+name, s.Command, flags)
		opt := options(s.Command)
		ids[opt["--fleet-id"]] = true
		u, err := url.Parse(opt["--store"])
		if err != nil || u.Scheme != "redis" {
			t.Errorf("%s: --store %q is not a redis:// URL", name, opt["--store"])
			continue
		}
		stores[u.String()] = true
		if _, ok := f.Services[u.Hostname()]; !ok {
			t.Errorf("%s: --store names host %q, which is no service", name, u.Hostname())
		}
		if !published(s.Ports, "27950/udp") {
			t.Errorf("%s: the master port 27950/udp is not published: %v", name, s.Ports)
		}
	}
	if masters != 3 {
		t.Errorf("%d scout services, want 3", masters)
	}
	if len(ids) != masters || ids[""] {
		t.Errorf("fleet ids %v: each instance needs its own", ids)
	}
	if len(stores) != 1 {
		t.Errorf("the instances use %d stores, want one shared: %v", len(stores), stores)
	}
}

// options maps each "--name value" of args to its value.
func options(args []string) map[string]string {
	m := map[string]string{}
	for i, a := range args {
		if name, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "--") {
			m[name] = v
		} else if strings.HasPrefix(a, "-") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			m[a] = args[i+1]
		}
	}
	return m
}

// published reports whether ports maps the container port want
// ("27950/udp") to some host port.
func published(ports []string, want string) bool {
	for _, p := range ports {
		if i := strings.LastIndex(p, ":"); i >= 0 && p[i+1:] == want {
			return true
		}
	}
	return false
}
