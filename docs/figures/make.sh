#!/bin/sh
# Regenerates the figures of EVALUATION.md ("Figures"), from the repository's
# root: sh docs/figures/make.sh (SIM_ONLY=1 sh docs/figures/make.sh skips
# the demo). The scout-lab sim figures (the six rows with the paper's algorithm,
# and AU-ET, AU-CSS and JP-CSS with the scout variant) are deterministic
# (seed 1, about 10 s); the demo's runs over real sockets on loopback, so its
# figure and numbers vary a little from run to run (about 45 s: 43.1 s on
# 2026-11-27; its table is in README.md and EVALUATION.md, from the run that
# drew the figure: paste them from that run's output). 1200x480 keeps each
# sim PNG under 300 KB; the demo's five panels are 1200x1260, about 290 KB.
set -eu
go build -o /tmp/scout-figures ./cmd/scout
go build -o /tmp/scout-figures-lab ./lab/cmd/scout-lab
for row in AU:et JP:et CH:et AU:css JP:css DE:css; do
	client=${row%:*}
	game=${row#*:}
	name=$(echo "$client-$game" | tr 'A-Z' 'a-z')
	/tmp/scout-figures-lab sim --client "$client" --game "$game" --seed 1 \
		--plot "docs/figures/sim-$name.png" --plot-width 1200 --plot-height 480 >/dev/null
done
for row in AU:et AU:css JP:css; do
	client=${row%:*}
	game=${row#*:}
	name=$(echo "$client-$game" | tr 'A-Z' 'a-z')
	/tmp/scout-figures-lab sim --client "$client" --game "$game" --seed 1 --plot-variant scout \
		--plot "docs/figures/sim-$name-scout.png" --plot-width 1200 --plot-height 480 >/dev/null
done
if [ "${SIM_ONLY:-}" = 1 ]; then
	exit 0
fi
/tmp/scout-figures demo --out docs/figures
rm -f docs/figures/scout-demo.svg
