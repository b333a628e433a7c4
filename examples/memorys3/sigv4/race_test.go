//go:build race

package sigv4

// raceEnabled: the race detector makes sync.Pool drop values at random, so allocation counts
// do not hold under it.
const raceEnabled = true
