//go:build !linux

package discobench

import "errors"

// tap is Linux-only (a packet socket on the loopback interface).
type tap struct{}

func openTap() (*tap, error) { return nil, errors.New("discobench: no loopback tap on this platform") }

func (t *tap) begin() {}
func (t *tap) end() ([]tapped, uint64, uint64, error) {
	return nil, 0, 0, errors.New("discobench: no loopback tap on this platform")
}
func (t *tap) close() {}
