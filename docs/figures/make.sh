#!/bin/sh
# Regenerates the figures of EVALUATION.md ("Figures"), from the repository's
# root: sh docs/figures/make.sh. The six scout sim figures are deterministic
# (seed 1); the demo's runs over real sockets on loopback, so its figure and
# numbers vary a little from run to run (about 45 s). 1200x480 keeps each PNG
# under 300 KB.
set -eu
go build -o /tmp/scout-figures ./cmd/scout
for row in AU:et JP:et CH:et AU:css JP:css DE:css; do
	client=${row%:*}
	game=${row#*:}
	name=$(echo "$client-$game" | tr 'A-Z' 'a-z')
	/tmp/scout-figures sim --client "$client" --game "$game" --seed 1 \
		--plot "docs/figures/sim-$name.png" --plot-width 1200 --plot-height 480 >/dev/null
done
/tmp/scout-figures demo --out docs/figures
rm -f docs/figures/scout-demo.svg
