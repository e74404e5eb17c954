// Package tui is the terminal server browser: a full-screen list of game
// servers that fills in as a discovery run's results arrive, nearest
// first, with keys to sort, filter, look at a server's players and
// settings, copy its address and start the game on it.
//
// The browser is a pure core and a thin shell. [Model] is a Bubble Tea
// model whose Update takes messages (a batch of discovery events, a key, a
// window size) and returns the next model and what to do, without I/O or
// a clock: its rules are tested by calling Update and reading View. [Run]
// is the shell: it starts the discovery run the caller gives it, batches
// its events into messages, runs the Bubble Tea program on the terminal,
// and starts the game or a new run when the model asks.
//
// The view fits the terminal's width from 80 columns up without wrapping
// a line: columns are dropped by priority (type, game, address, map) when
// the width does not hold them, and server-controlled text is cleaned
// ([browser.Name]) and clipped to its column by display width.
package tui
