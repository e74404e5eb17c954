#!/bin/sh
# Draws the terminal browser's screenshots for README.md, from the
# repository's root: sh docs/figures/terminal.sh. On loopback only: an
# emulated world (scout-lab world, 800 servers) heartbeating to scout
# master, and scout-lab servers (scout servers on the world's addresses)
# in a tmux terminal of 80x24. It writes what tmux shows as text
# (terminal-80x24.txt, terminal-80x24-details.txt: capture-pane -p) and as
# PNG (the same capture with its attributes, capture-pane -e, drawn in a
# monospace font by headless Chromium). About 20 s; everything it starts
# is stopped when it ends. Needs tmux, chromium and python3.
set -eu
out=docs/figures
tmp=$(mktemp -d)
pids=""
sock="$tmp/tmux.sock"
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	for p in $pids; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/scout" ./cmd/scout
go build -o "$tmp/scout-lab" ./lab/cmd/scout-lab
udp=$(python3 -c 'import socket
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);u.bind(("127.0.0.1",0))
print(u.getsockname()[1])')
master=127.0.0.1:$udp

setsid "$tmp/scout-lab" world --servers 800 --seed 3 --master "$master" --map-out "$tmp/map.json" \
	--heartbeat-interval 10s >"$tmp/world.log" 2>&1 &
pids="$pids $!"
i=0
while [ ! -s "$tmp/map.json" ]; do
	i=$((i + 1)); [ $i -lt 300 ] || { cat "$tmp/world.log"; exit 1; }
	sleep 0.1
done
setsid "$tmp/scout" master -l 127.0.0.1 -p "$udp" --list-loopback --world-map "$tmp/map.json" -v 2 \
	>"$tmp/master.log" 2>&1 &
pids="$pids $!"
# Wait until the master lists most of the world's Enemy Territory servers
# (it checks each heartbeat with a challenge first).
i=0
until [ "$("$tmp/scout-lab" servers --game et --master "$master" --world-map "$tmp/map.json" --json \
	--max-time 10s 2>/dev/null | grep -c '"type":"server"')" -ge 50 ]; do
	i=$((i + 1)); [ $i -lt 30 ] || { tail "$tmp/master.log"; exit 1; }
	sleep 1
done

# wait_for TEXT: poll the screen until it shows TEXT (30 s at most).
wait_for() {
	i=0
	until tmux -S "$sock" capture-pane -p | grep -q "$1"; do
		i=$((i + 1)); [ $i -lt 300 ] || { tmux -S "$sock" capture-pane -p; exit 1; }
		sleep 0.1
	done
}
# png NAME: the pane, with its attributes, as NAME.txt and NAME.png.
png() {
	tmux -S "$sock" capture-pane -p >"$out/$1.txt"
	tmux -S "$sock" capture-pane -p -e | python3 -c '
import html, re, sys
lines = sys.stdin.read().rstrip("\n").split("\n")
style = {"1": "font-weight:bold", "2": "opacity:.6", "4": "text-decoration:underline", "7": "background:#ddd;color:#111"}
out = []
for line in lines:
    cur, parts = [], []
    for tok in re.split(r"(\x1b\[[0-9;]*m)", line):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", tok)
        if m:
            codes = m.group(1).split(";") if m.group(1) else ["0"]
            for c in codes:
                if c == "0":
                    cur = []
                elif c in style:
                    cur.append(style[c])
            continue
        if tok:
            parts.append("<span style=\"%s\">%s</span>" % (";".join(cur), html.escape(tok)))
    out.append("".join(parts) or " ")
print("<!doctype html><meta charset=utf-8><body style=\"margin:0;background:#111;color:#ddd\">"
      "<pre style=\"margin:0;padding:8px;font:15px/1.25 DejaVu Sans Mono,monospace\">" + "\n".join(out) + "</pre>")
' >"$tmp/$1.html"
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chrome" \
		--disable-background-networking --disable-component-update --disable-sync --no-first-run \
		--window-size=740,500 --screenshot="$out/$1.png" "file://$tmp/$1.html" >/dev/null 2>&1
}

tmux -S "$sock" -f /dev/null new-session -d -x 80 -y 24 \
	"$tmp/scout-lab" servers --game et --master "$master" --world-map "$tmp/map.json" --status
wait_for "done in"
png terminal-80x24
tmux -S "$sock" send-keys Down Down Enter
wait_for "masters  "
png terminal-80x24-details
ls -l "$out"/terminal-80x24*
