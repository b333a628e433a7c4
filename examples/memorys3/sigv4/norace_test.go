//go:build !race

package sigv4

// raceEnabled: see race_test.go.
const raceEnabled = false
