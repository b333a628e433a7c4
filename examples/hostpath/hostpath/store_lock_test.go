package hostpath

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inUseBound is far below bbolt's old 5 s lock wait and far above one flock call: a second
// plugin must be refused at once, not after a timeout.
const inUseBound = time.Second

// TestOpenStateInUse: a second plugin on a state database another one holds fails at once,
// naming the state directory; plugins whose modes use different databases share a directory.
func TestOpenStateInUse(t *testing.T) {
	tests := []struct {
		first, second string
		wantInUse     bool
		// wantLocked names the database the refusal blames.
		wantLocked string
	}{
		{ModeBoth, ModeBoth, true, "controller.db"},
		{ModeBoth, ModeController, true, "controller.db"},
		{ModeBoth, ModeNode, true, "node.db"},
		{ModeController, ModeController, true, "controller.db"},
		{ModeNode, ModeNode, true, "node.db"},
		{ModeNode, ModeBoth, true, "node.db"},
		// Separate controller and node processes on one state directory are a valid setup.
		{ModeController, ModeNode, false, ""},
		{ModeNode, ModeController, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.first+" then "+tt.second, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			cfg := Config{StateDir: state, NodeID: "node-1", CapacityBytes: 1 << 30}
			first, err := Open(cfg, tt.first)
			if err != nil {
				t.Fatalf("first Open(%s): %v", tt.first, err)
			}
			defer first.Close()

			start := time.Now()
			second, err := Open(cfg, tt.second)
			took := time.Since(start)
			if !tt.wantInUse {
				if err != nil {
					t.Fatalf("second Open(%s): %v", tt.second, err)
				}
				second.Close()
				return
			}
			if err == nil {
				second.Close()
				t.Fatalf("second Open(%s) on a state directory in use succeeded", tt.second)
			}
			if !errors.Is(err, ErrStateInUse) {
				t.Errorf("error %v does not wrap ErrStateInUse", err)
			}
			real, _ := filepath.EvalSymlinks(state)
			for _, want := range []string{"state dir " + real + " is in use by another process", tt.wantLocked + " is locked"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if took > inUseBound {
				t.Errorf("refusal took %v, want it at once (under %v)", took, inUseBound)
			}
		})
	}
}

// TestOpenStateAfterClose: the lock is released with the plugin, so a restart on the same state
// succeeds at once.
func TestOpenStateAfterClose(t *testing.T) {
	cfg := Config{StateDir: filepath.Join(t.TempDir(), "state"), NodeID: "node-1", CapacityBytes: 1 << 30}
	for i := range 3 {
		p, err := Open(cfg, ModeBoth)
		if err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
}
