package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
const dissectTestdata = "../../protocol/dissect/testdata"

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

// Real captures of an OpenArena 0.8.8 server on loopback, with tshark's
// reading of each (testdata/decode/README.md).
const decodeTestdata = "testdata/decode"

// oa088Packet is what one packet of the OpenArena captures is.
type oa088Packet struct {
	message   string
	challenge string // sent in the request, echoed in the reply; "" for none
}

// The exchanges of the captures: round 1 (getinfo abc, then qstat's
// getinfo and getstatus) and round 2 (getstatus xyz).
var (
	oa088Round1 = []oa088Packet{{"getinfo", "abc"}, {"infoResponse", "abc"},
		{"getinfo", ""}, {"infoResponse", ""}, {"getstatus", ""}, {"statusResponse", ""}}
	oa088Round2 = []oa088Packet{{"getstatus", "xyz"}, {"statusResponse", "xyz"}}
)

// tsharkFrame is one line of a FILE.tshark.tsv.
type tsharkFrame struct {
	number   string
	time     time.Time
	src, dst string
	length   int
}

func readTsharkTSV(t *testing.T, path string) []tsharkFrame {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var frames []tsharkFrame
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			t.Fatalf("%s: %d fields in %q", path, len(f), line)
		}
		sec, frac, _ := strings.Cut(f[1], ".")
		s, err1 := strconv.ParseInt(sec, 10, 64)
		ns, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad time %q", path, f[1])
		}
		frames = append(frames, tsharkFrame{number: f[0], time: time.Unix(s, ns).UTC(),
			src: f[2] + ":" + f[3], dst: f[4] + ":" + f[5], length: len(f[6]) / 2})
	}
	return frames
}

// checkOA088 checks the records scout decode printed for one capture
// against tshark's reading of it and the exchanges it holds.
func checkOA088(t *testing.T, recs []map[string]any, firstIndex int, input, sourceWord string, frames []tsharkFrame, want []oa088Packet) {
	t.Helper()
	if len(recs) != len(frames) || len(recs) != len(want) {
		t.Fatalf("%d records, tshark reads %d frames, want %d packets", len(recs), len(frames), len(want))
	}
	for i, r := range recs {
		f, w := frames[i], want[i]
		if r["index"] != float64(firstIndex+i) || r["input"] != input || r["source"] != sourceWord+" "+f.number {
			t.Errorf("packet %d: index %v input %v source %v, want %d %s %q", i, r["index"], r["input"], r["source"],
				firstIndex+i, input, sourceWord+" "+f.number)
		}
		if r["src"] != f.src || r["dst"] != f.dst || r["length"] != float64(f.length) {
			t.Errorf("packet %d: %v -> %v, %v bytes; tshark reads %s -> %s, %d bytes", i, r["src"], r["dst"], r["length"], f.src, f.dst, f.length)
		}
		ts, _ := r["time"].(string)
		if got, err := time.Parse(time.RFC3339Nano, ts); err != nil || !got.Equal(f.time) {
			t.Errorf("packet %d: time %q, tshark reads %s", i, ts, f.time.Format(time.RFC3339Nano))
		}
		if r["family"] != "q3" || r["message"] != w.message || r["error"] != nil {
			t.Errorf("packet %d: family %v message %v error %v, want q3 %s", i, r["family"], r["message"], r["error"], w.message)
			continue
		}
		fields, _ := r["fields"].(map[string]any)
		info, _ := fields["info"].(map[string]any)
		challenge := fields["challenge"]
		switch w.message {
		case "infoResponse":
			if info["hostname"] != "oa-peer-28960" || info["mapname"] != "oa_dm1" || info["protocol"] != "71" {
				t.Errorf("packet %d: infoResponse info = %v", i, info)
			}
			challenge = info["challenge"]
		case "statusResponse":
			if info["sv_hostname"] != "oa-peer-28960" || info["mapname"] != "oa_dm1" || info["com_gamename"] != "Quake3Arena" {
				t.Errorf("packet %d: statusResponse info = %v", i, info)
			}
			challenge = info["challenge"]
		}
		if w.challenge == "" && challenge != nil || w.challenge != "" && challenge != w.challenge {
			t.Errorf("packet %d (%s): challenge %v, want %q", i, w.message, challenge, w.challenge)
		}
	}
}

// oa088Captures are the capture files, the word scout decode names their
// packets with, and what they hold.
var oa088Captures = []struct {
	file, sourceWord string
	want             []oa088Packet
}{
	{"oa088_lo_usec.pcap", "pcap record", append(append([]oa088Packet(nil), oa088Round1...), oa088Round2...)},
	{"oa088_lo_nsec.pcap", "pcap record", oa088Round1},
	{"oa088_lo.pcapng", "pcapng packet", oa088Round1},
	{"oa088_any_sll2.pcap", "pcap record", oa088Round2},
	{"oa088_any_sll.pcapng", "pcapng packet", oa088Round2},
}

// TestDecode_RealCaptures runs scout decode on each real capture given as a
// file, as "-" and as nothing (both standard input), and compares what it
// prints with tshark's reading.
func TestDecode_RealCaptures(t *testing.T) {
	for _, c := range oa088Captures {
		path := filepath.Join(decodeTestdata, c.file)
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		frames := readTsharkTSV(t, path+".tshark.tsv")
		for _, how := range []struct {
			name, input string
			stdin       []byte
			args        []string
		}{
			{"file", path, nil, []string{path}},
			{"stdin-dash", "-", in, []string{"-"}},
			{"stdin", "-", in, nil},
		} {
			t.Run(c.file+"/"+how.name, func(t *testing.T) {
				code, recs, stderr := decodeRun(t, how.stdin, how.args...)
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
				}
				checkOA088(t, recs, 0, how.input, c.sourceWord, frames, c.want)
			})
		}
	}
}

// TestDecode_CaptureFileThenStdin decodes a pcap file and a pcapng on
// standard input in one run: the packet index runs on across inputs.
func TestDecode_CaptureFileThenStdin(t *testing.T) {
	pcap := filepath.Join(decodeTestdata, "oa088_lo_usec.pcap")
	pcapng := filepath.Join(decodeTestdata, "oa088_any_sll.pcapng")
	in, err := os.ReadFile(pcapng)
	if err != nil {
		t.Fatal(err)
	}
	code, recs, stderr := decodeRun(t, in, "--format", "auto", pcap, "-")
	if code != 0 || stderr != "" || len(recs) != 10 {
		t.Fatalf("exit %d, %d records, stderr %q; want 0, 10, nothing", code, len(recs), stderr)
	}
	checkOA088(t, recs[:8], 0, pcap, "pcap record", readTsharkTSV(t, pcap+".tshark.tsv"), append(append([]oa088Packet(nil), oa088Round1...), oa088Round2...))
	checkOA088(t, recs[8:], 8, "-", "pcapng packet", readTsharkTSV(t, pcapng+".tshark.tsv"), oa088Round2)
}

// TestDecode_CaptureFormatForced: --format pcap and --format pcapng read
// their own format and refuse the other with exit 1 and a reason.
func TestDecode_CaptureFormatForced(t *testing.T) {
	pcap := filepath.Join(decodeTestdata, "oa088_any_sll2.pcap")
	pcapng := filepath.Join(decodeTestdata, "oa088_any_sll.pcapng")
	if code, recs, stderr := decodeRun(t, nil, "--format", "pcap", pcap); code != 0 || len(recs) != 2 {
		t.Errorf("--format pcap on a pcap: exit %d, %d records, stderr %q", code, len(recs), stderr)
	}
	if code, recs, stderr := decodeRun(t, nil, "--format", "pcapng", pcapng); code != 0 || len(recs) != 2 {
		t.Errorf("--format pcapng on a pcapng: exit %d, %d records, stderr %q", code, len(recs), stderr)
	}
	if code, recs, stderr := decodeRun(t, nil, "--format", "pcapng", pcap); code != 1 || len(recs) != 0 || !strings.Contains(stderr, pcap) {
		t.Errorf("--format pcapng on a pcap: exit %d, %d records, stderr %q; want 1, none, the file named", code, len(recs), stderr)
	}
}

// TestDecode_AcceptsEveryQueryTheMasterAnswers: the decoder reads queries
// with the master's parser (q3.ParseQuery), so "getservers 20 " with its
// trailing space, which the master answers, decodes without an error.
func TestDecode_AcceptsEveryQueryTheMasterAnswers(t *testing.T) {
	in := hex.EncodeToString([]byte("\xff\xff\xff\xffgetservers 20 ")) + "\n"
	code, recs, stderr := decodeRun(t, []byte(in), "--format", "hex", "-")
	if code != 0 || len(recs) != 1 || recs[0]["message"] != "getservers" || recs[0]["error"] != nil {
		t.Fatalf("exit %d, records %v, stderr %q", code, recs, stderr)
	}
}
