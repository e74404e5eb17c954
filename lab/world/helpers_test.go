package world

import "os"

// testingCI reports whether tests run in CI, where tools that may be
// missing on a laptop must be present.
func testingCI() bool { return os.Getenv("CI") != "" }
