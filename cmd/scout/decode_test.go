package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decodeRun runs scout decode with stdin and returns the exit status, the
// records printed and standard error.
func decodeRun(t testing.TB, stdin []byte, args ...string) (int, []map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := decodeMain(context.Background(), args, bytes.NewReader(stdin), &out, &errb)
	var recs []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line is not JSON: %v: %s", err, sc.Bytes())
		}
		recs = append(recs, m)
	}
	return code, recs, errb.String()
}

// The dissect package's test data: the seed figures and the shared vectors.
const dissectTestdata = "../../dissect/testdata"

func TestDecode_SeedFiguresAndVectors(t *testing.T) {
	want := map[string][2]string{ // file -> family, message
		"seed000_fig3.txt": {"q3", "infoResponse"},
		"seed000_fig4.txt": {"q3", "heartbeat"},
		"seed000_fig5.txt": {"q3", "heartbeat"},
		"seed000_fig6.txt": {"q4", "getServers"},
		"seed000_fig7.txt": {"q4", "servers"},
		"seed000_fig8.txt": {"q4", "infoResponse"},
	}
	vecs, err := filepath.Glob(filepath.Join(dissectTestdata, "vectors", "*.hex"))
	if err != nil || len(vecs) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, v := range vecs {
		name := filepath.Base(v)
		switch {
		case strings.Contains(name, "_q4_") || strings.Contains(name, "quake4") || strings.Contains(name, "q4") || strings.Contains(name, "dm3"):
			want["vectors/"+name] = [2]string{"q4", ""}
		case strings.Contains(name, "ut3") || strings.Contains(name, "gs4"):
			want["vectors/"+name] = [2]string{"gs4", ""}
		case strings.Contains(name, "a2s"):
			want["vectors/"+name] = [2]string{"a2s", ""}
		case strings.Contains(name, "stm"):
			want["vectors/"+name] = [2]string{"steammaster", ""}
		default:
			want["vectors/"+name] = [2]string{"q3", ""}
		}
	}
	for file, fm := range want {
		t.Run(file, func(t *testing.T) {
			code, recs, stderr := decodeRun(t, nil, filepath.Join(dissectTestdata, file))
			if code != 0 || len(recs) != 1 {
				t.Fatalf("exit %d, %d records, want 0 and 1; stderr:\n%s", code, len(recs), stderr)
			}
			r := recs[0]
			if r["family"] != fm[0] || (fm[1] != "" && r["message"] != fm[1]) {
				t.Errorf("family %v message %v, want %s %s", r["family"], r["message"], fm[0], fm[1])
			}
			if r["message"] == nil || r["fields"] == nil {
				t.Errorf("record lacks message or fields: %v", r)
			}
		})
	}
}

func TestDecode_ElidedFigureReportsMissingBytes(t *testing.T) {
	code, recs, stderr := decodeRun(t, nil, filepath.Join(dissectTestdata, "seed000_fig7.txt"))
	if code != 0 || len(recs) != 1 {
		t.Fatalf("exit %d, %d records; stderr %s", code, len(recs), stderr)
	}
	r := recs[0]
	if r["src"] != "192.246.40.28:27650" || r["dst"] != "10.1.1.2:1590" || r["length"] != 1396.0 {
		t.Errorf("src %v dst %v length %v", r["src"], r["dst"], r["length"])
	}
	missing, _ := r["missing"].([]any)
	if len(missing) != 1 || !strings.Contains(stderr, "missing") {
		t.Errorf("missing = %v, stderr %q: want the gap in both", r["missing"], stderr)
	}
	servers := r["fields"].(map[string]any)["servers"].([]any)
	if len(servers) != 17 || servers[0] != "85.236.101.43:28014" || servers[16] != "195.13.62.58:29000" {
		t.Errorf("servers = %v, want the head's 7 and the tail's 10", servers)
	}
	if r["lost"] == nil || r["tail"] == nil {
		t.Errorf("lost %v tail %v, want both", r["lost"], r["tail"])
	}
}

func TestDecode_GarbageExitsOneWithReason(t *testing.T) {
	code, recs, stderr := decodeRun(t, []byte("\x13\x37 this is no game packet"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if len(recs) != 1 || recs[0]["error"] == nil || !strings.Contains(stderr, "unknown protocol") {
		t.Errorf("records %v, stderr %q: want the reason in both", recs, stderr)
	}
}

func TestDecode_GoesOnAfterABadPacket(t *testing.T) {
	// Two hex packets, the first garbage, the second a Quake 4 getInfo.
	in := "01 02 03 04\n\nff ff 67 65 74 49 6e 66 6f 00 00 00 00 00\n"
	code, recs, _ := decodeRun(t, []byte(in), "--format", "hex", "-")
	if code != 1 || len(recs) != 2 {
		t.Fatalf("exit %d, %d records; want 1 and 2", code, len(recs))
	}
	if recs[1]["family"] != "q4" || recs[1]["message"] != "getInfo" || recs[1]["index"] != 1.0 {
		t.Errorf("second record = %v", recs[1])
	}
}

func TestDecode_EmptyInputSaysSo(t *testing.T) {
	code, recs, stderr := decodeRun(t, nil)
	if code != 1 || len(recs) != 0 || !strings.Contains(stderr, "empty input") {
		t.Errorf("exit %d, records %v, stderr %q: want 1, none, \"empty input\"", code, recs, stderr)
	}
}

func TestDecode_ProtoForcesFamily(t *testing.T) {
	// A GameSpy 4 challenge reply: 09 <session> "-12345" NUL. Without a
	// hint it decodes because it parses fully; forced to q4 it fails.
	pkt := append([]byte{0x09, 0, 0, 0, 1}, "-12345\x00"...)
	if code, recs, stderr := decodeRun(t, pkt); code != 0 || recs[0]["family"] != "gs4" || recs[0]["message"] != "challengeReply" {
		t.Errorf("auto: exit %d records %v stderr %s", code, recs, stderr)
	}
	if code, recs, _ := decodeRun(t, pkt, "--proto", "q4"); code != 1 || recs[0]["family"] != "q4" || recs[0]["error"] == nil {
		t.Errorf("--proto q4: exit %d records %v", code, recs)
	}
}

func TestDecode_BadFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--format", "jpeg"}, {"--proto", "doom5"}} {
		if code, _, _ := decodeRun(t, nil, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestDecode_MissingFile(t *testing.T) {
	code, _, stderr := decodeRun(t, nil, filepath.Join(t.TempDir(), "nope"))
	if code != 1 || !strings.Contains(stderr, "nope") {
		t.Errorf("exit %d stderr %q", code, stderr)
	}
}

func TestDecode_Pretty(t *testing.T) {
	var out, errb bytes.Buffer
	in, err := os.ReadFile(filepath.Join(dissectTestdata, "vectors", "qstat_req_gs4_challenge.hex"))
	if err != nil {
		t.Fatal(err)
	}
	code := decodeMain(context.Background(), []string{"--pretty"}, bytes.NewReader(in), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "\n  \"family\": \"gs4\"") {
		t.Errorf("exit %d output %s", code, out.String())
	}
}

// FuzzDecodeCommand feeds arbitrary input to scout decode: it must not
// panic, must exit 0 or 1, and must print JSON.
func FuzzDecodeCommand(f *testing.F) {
	for _, p := range []string{"seed000_fig7.txt", "seed000_fig8.txt", "seed000_fig3.txt", "vectors/ours_q4_infoResponse_accepted_by_qstat_and_gamedig.hex"} {
		b, err := os.ReadFile(filepath.Join(dissectTestdata, p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\xfe\xfd\x09\x10\x20\x30\x40"))
	f.Add([]byte("\xd4\xc3\xb2\xa1"))
	f.Fuzz(func(t *testing.T, in []byte) {
		code, _, _ := decodeRun(t, in)
		if code != 0 && code != 1 {
			t.Fatalf("exit %d", code)
		}
	})
}
