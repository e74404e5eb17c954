#!/bin/sh
# Draws the server browser's screenshots for README.md, from the repository's
# root: sh docs/figures/web.sh. It runs the README's first look on loopback
# only: an emulated world (scout-lab world, 200 servers) heartbeating to
# scout master --http, plus Debian's OpenArena server with three bots when
# it is installed, then has headless Chromium (Debian's chromium) take
# docs/figures/web.png (1280 px wide, pings estimated from Australia),
# web-server.png (the OpenArena server's own page, /servers/ADDRESS, or the
# best-filled server's) and web-phone.png (390 px). Countries are text, so
# no emoji font is needed. The browser tests draw the same page and the
# detail panel with chromedp: SCOUT_WEB_SHOTS=$PWD/docs/figures go test
# -run TestBrowser_ServerList ./web writes web.png, web-detail.png,
# web-phone.png and web-phone-detail.png. About 30 s. Everything it starts
# is stopped when it ends.
set -eu
out=docs/figures
tmp=$(mktemp -d)
pids=""
cleanup() {
	# Each was started in its own process group (setsid): the OpenArena
	# launcher is a shell script whose server is its child.
	for p in $pids; do kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

go build -o "$tmp/scout" ./cmd/scout
go build -o "$tmp/scout-lab" ./lab/cmd/scout-lab
# Free loopback ports for the master (UDP) and the page (TCP).
ports=$(python3 -c 'import socket
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);u.bind(("127.0.0.1",0))
t=socket.socket();t.bind(("127.0.0.1",0))
print(u.getsockname()[1],t.getsockname()[1])')
udp=${ports% *}
http=${ports#* }
master=127.0.0.1:$udp
web=http://127.0.0.1:$http

# The world first: the master publishes its servers at their public
# addresses from the table it writes (--world-map).
setsid "$tmp/scout-lab" world --servers 200 --seed 3 --master "$master" --map-out "$tmp/map.json" \
	--heartbeat-interval 10s >"$tmp/world.log" 2>&1 &
pids="$pids $!"
i=0
while [ ! -s "$tmp/map.json" ]; do
	i=$((i + 1)); [ $i -lt 300 ] || { cat "$tmp/world.log"; exit 1; }
	sleep 0.1
done
setsid "$tmp/scout" master -l 127.0.0.1 -p "$udp" --list-loopback --world-map "$tmp/map.json" \
	-g Quake3Arena reprobe=5s -g et reprobe=5s -g wolfmp reprobe=5s --http "127.0.0.1:$http" -v 2 >"$tmp/master.log" 2>&1 &
pids="$pids $!"
if [ -x /usr/games/openarena-server ]; then
	setsid /usr/games/openarena-server +set ttycon 0 +set fs_homepath "$tmp/oa" +set net_ip 127.0.0.1 \
		+set net_port 0 +set dedicated 2 +set sv_master1 "$master" +set sv_master2 "" +set sv_master3 "" \
		+set sv_hostname "^1Open^7Arena ^4on loopback" +map oa_dm1 +addbot sarge 1 +addbot grism 1 \
		+addbot kyonshi 1 >"$tmp/oa.log" 2>&1 &
	pids="$pids $!"
fi
# Wait for the list to fill (147 of this world's servers heartbeat: UT3 and
# Source ones do not), then for the best-filled server's player list (the
# master's first re-probe of it, 5 s after it was verified: sooner than the
# next heartbeat, whose check would put the re-probe off).
n=0 i=0
while [ "$n" -lt 140 ]; do
	i=$((i + 1)); [ $i -lt 60 ] || { echo "only $n servers listed" >&2; tail "$tmp/master.log"; exit 1; }
	sleep 1
	n=$(curl -s "$web/api/v1/servers?per_page=1" | sed -n 's/.*"total": *\([0-9]*\).*/\1/p')
	n=${n:-0}
done
# The panel shows the OpenArena server when there is one (coloured name,
# three bots), else the best-filled server.
top=$(curl -s "$web/api/v1/servers?q=loopback&per_page=1" | sed -n 's/.*"address": *"\([^"]*\)".*/\1/p')
[ -n "$top" ] || top=$(curl -s "$web/api/v1/servers?per_page=1" | sed -n 's/.*"address": *"\([^"]*\)".*/\1/p')
i=0
until curl -s "$web/api/v1/servers/$top" | grep -q '"player_list": *\[{'; do
	i=$((i + 1)); [ $i -lt 60 ] || { echo "no player list for $top" >&2; exit 1; }
	sleep 1
done

shot() { # WIDTH HEIGHT FILE URL
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chrome" \
		--window-size="$1,$2" --virtual-time-budget=4000 --screenshot="$3" "$4" >/dev/null 2>&1
}
shot 1280 900 "$out/web.png" "$web/?from=AU"
shot 1280 860 "$out/web-server.png" "$web/servers/$top"
shot 390 844 "$out/web-phone.png" "$web/?from=AU"
ls -l "$out"/web.png "$out"/web-server.png "$out"/web-phone.png
