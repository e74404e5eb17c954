// Package rttplot draws game-server discovery runs the way Armitage draws them
// in "Client-Side Adaptive Search Optimisation for Online Game Server
// Discovery" (NETWORKING 2008), Figures 2 to 9: the RTT of every probe
// against the time it was sent, for the conventional probe sequence (master
// order) and for the re-ordered one of Algorithm 1, with Algorithm 2's running
// 2nd-percentile RTT ("RTTbottom"), the RTTstop threshold as a horizontal line
// and the moment auto-stop fired as a vertical line.
//
// The package owns no socket and reads no clock: a producer (the simulator in
// virtual time, live discovery on real sockets) hands it a [Chart] of plain
// values, and it writes SVG or PNG. The same Chart always gives the same
// bytes.
//
// # What is drawn
//
//   - One dot per answered probe at (At, RTT). Conventional and re-ordered
//     probes are small filled dots; calibration probes (Algorithm 1 step 4)
//     are hollow triangles and split probes (step 4(e)) hollow diamonds, so
//     the two phases of the adaptive run can be told apart, as the paper
//     tells "initial probes" from "re-ordered probes".
//   - Probes that got no reply are drawn as small crosses on the top edge of
//     the plot, not omitted: Algorithm 2 counts them as RTTs above every
//     playable one, and a run that loses many probes should look like it.
//     Answered RTTs above [Chart].MaxRTT are pinned to the top edge with
//     their own marker, and the top tick is then labelled "≥" its value.
//   - [Series].Bottom as a step line (each value holds until the next probe;
//     see [Bottom]); where the percentile falls on an unanswered probe the
//     line runs along the top edge.
//   - [Chart].StopRTT as a dashed horizontal line labelled "RTTstop".
//   - [Series].StopAt as a vertical line labelled "auto-stop" and the time.
//   - [Series].Marks as dotted vertical lines labelled at the foot of the
//     panel: "last playable 9.0 s".
//
// Every series has its own colour. [Overlay] draws all series in one panel;
// [SideBySide] draws one panel per series, left to right, on the same axes,
// so a run that finishes sooner ends further left. The legend sits to the
// right of the panels, or under them, one column per series, when the chart
// is too narrow for that; every entry gives its count of probes.
// With [Chart].Key the legend is a key under the panels instead: one entry
// per kind of mark, in neutral ink, each panel's title giving its probe
// counts, and [Chart].Caption under it; [Chart].Columns wraps the panels
// into rows.
package rttplot
