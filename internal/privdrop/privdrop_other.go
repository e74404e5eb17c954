//go:build !unix

package privdrop

// Drop refuses any privilege drop: this platform has no setuid or chroot.
func Drop(o Options) error {
	if o == (Options{}) {
		return nil
	}
	return ErrUnsupported
}
