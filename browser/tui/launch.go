package tui

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ConfigName is the launch configuration's file name in scout's folder of
// the user's configuration directory (os.UserConfigDir: ~/.config on
// Linux and the BSDs, ~/Library/Application Support on macOS, %AppData%
// on Windows).
//
// Each line names a game or mod and the command that starts it; the
// browser appends "+connect ADDRESS" when the player starts the game on a
// server. Blank lines and lines starting with '#' are ignored; words are
// split on spaces, and a word may be double-quoted to hold spaces:
//
//	# game or mod = command and arguments
//	Quake3Arena = /usr/games/quake3 +set fs_game baseq3
//	baseoa      = /usr/games/openarena
//	wolfmp      = "C:\Games\RtCW\WolfMP.exe"
//
// The name is matched without regard to case against the server's own
// game or mod (its gamename, game, si_game or folder key) first, then the
// game scout was asked for (--game).
const ConfigName = "launch.conf"

// MaxConfigSize bounds the launch configuration file.
const MaxConfigSize = 64 << 10

// ConfigPath is where the launch configuration is read from, "" when the
// platform has no configuration directory.
func ConfigPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "scout", ConfigName)
}

// Commands are the commands that start each game, keyed by the game or
// mod's name in lower case.
type Commands map[string][]string

// LoadCommands reads the launch configuration at path. A missing file is
// no error: no game has a command.
func LoadCommands(path string) (Commands, error) {
	if path == "" {
		return Commands{}, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Commands{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxConfigSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxConfigSize)
	}
	c, err := ParseCommands(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseCommands reads a launch configuration (see ConfigName).
func ParseCommands(s string) (Commands, error) {
	c := Commands{}
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, MaxConfigSize)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, cmd, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d: want GAME = COMMAND", n)
		}
		argv, err := splitWords(cmd)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(argv) == 0 {
			return nil, fmt.Errorf("line %d: no command for %s", n, name)
		}
		c[strings.ToLower(name)] = argv
	}
	return c, sc.Err()
}

// splitWords splits s on spaces and tabs; a double-quoted word may hold
// them (there is no escape: a path on Windows keeps its backslashes).
func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
			in = true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quoted {
		return nil, errors.New("unterminated quote")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// For returns the command line that starts a game on addr: the command
// configured for mod, else for game, then "+connect" addr. It reports
// false when neither has a command.
func (c Commands) For(mod, game, addr string) ([]string, bool) {
	for _, k := range []string{mod, game} {
		if argv, ok := c[strings.ToLower(k)]; ok && k != "" {
			return append(append([]string(nil), argv...), "+connect", addr), true
		}
	}
	return nil, false
}
