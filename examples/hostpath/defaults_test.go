package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// withIdentity makes defaultStateDir see the given user and cache directory for one test.
func withIdentity(t *testing.T, euid int, cache string, cacheErr error) {
	t.Helper()
	oldEUID, oldCache := geteuid, userCacheDir
	geteuid = func() int { return euid }
	userCacheDir = func() (string, error) { return cache, cacheErr }
	t.Cleanup(func() { geteuid, userCacheDir = oldEUID, oldCache })
}

func TestDefaultStateDir(t *testing.T) {
	socketDir := filepath.Dir(strings.TrimPrefix(defaultEndpoint, "unix://"))
	tests := []struct {
		name     string
		euid     int
		cache    string
		cacheErr error
		want     string
		wantErr  string
	}{
		{name: "root gets a persistent system directory", euid: 0, cache: "/root/.cache", want: "/var/lib/csikit-hostpath"},
		{name: "a user gets a directory of their own", euid: 1000, cache: "/home/u/.cache", want: "/home/u/.cache/csikit-hostpath"},
		{name: "no home means asking for the flag", euid: 1000, cacheErr: errors.New("neither $XDG_CACHE_HOME nor $HOME are defined"),
			wantErr: "no default state directory: neither $XDG_CACHE_HOME nor $HOME are defined; pass --state-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withIdentity(t, tt.euid, tt.cache, tt.cacheErr)
			got, err := defaultStateDir()
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("defaultStateDir() = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("defaultStateDir() = %q, %v; want %q", got, err, tt.want)
			}
			if inside(realPath(got), realPath(socketDir)) || inside(realPath(socketDir), realPath(got)) {
				t.Fatalf("default state directory %s is the default socket's directory", got)
			}
		})
	}
}

// serve runs the driver in-process with args until the test ends, and waits until it answers.
func serve(t *testing.T, sock string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--endpoint", "unix://" + sock, "--log-level", "error"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("driver stopped with %v", err)
		}
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	probeCtx, probeCancel := context.WithTimeout(ctx, 30*time.Second)
	defer probeCancel()
	probed := make(chan error, 1)
	go func() {
		_, err := csi.NewIdentityClient(conn).Probe(probeCtx, &csi.ProbeRequest{}, grpc.WaitForReady(true))
		probed <- err
	}()
	select {
	case err := <-probed:
		if err != nil {
			t.Fatalf("driver does not answer: %v", err)
		}
	case err := <-done:
		done <- err // for the cleanup
		probeCancel()
		<-probed
		t.Fatalf("driver stopped before answering: %v", err)
	}
}

// TestDefaultsKeepSocketDirClean starts the driver as a newcomer does, with no --state-dir: the
// socket's directory holds the socket and nothing else, and the state is in the default place.
func TestDefaultsKeepSocketDirClean(t *testing.T) {
	dir := shortDir(t)
	cache := filepath.Join(dir, "cache")
	withIdentity(t, 1000, cache, nil)
	sock := filepath.Join(dir, "sock", "csi.sock")
	serve(t, sock, "--mode", "controller")

	entries, err := os.ReadDir(filepath.Dir(sock))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"csi.sock"}) {
		t.Errorf("socket directory holds %v, want only csi.sock", names)
	}
	if _, err := os.Stat(filepath.Join(cache, "csikit-hostpath", "controller.db")); err != nil {
		t.Errorf("state is not in the default directory: %v", err)
	}
}

// TestSecondInstanceFailsAtOnce: a second driver on a state directory in use is refused at once,
// in words that name the directory, instead of waiting for a lock timeout.
func TestSecondInstanceFailsAtOnce(t *testing.T) {
	dir := shortDir(t)
	state := filepath.Join(dir, "state")
	serve(t, filepath.Join(dir, "a", "csi.sock"), "--state-dir", state, "--mode", "controller")

	start := time.Now()
	err := run(context.Background(), []string{"--endpoint", "unix://" + filepath.Join(dir, "b", "csi.sock"), "--log-level", "error",
		"--state-dir", state, "--mode", "controller"})
	took := time.Since(start)
	want := "state dir " + state + " is in use by another process"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second instance: error %v, want it to say %q", err, want)
	}
	if took > time.Second {
		t.Errorf("second instance took %v to fail, want at once", took)
	}
	if _, err := os.Stat(filepath.Join(dir, "b", "csi.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused instance left a socket behind: %v", err)
	}
}

func TestStateBesideSocket(t *testing.T) {
	dir := shortDir(t)
	sockDir := filepath.Join(dir, "sock")
	if err := os.MkdirAll(sockDir, 0o750); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sockDir, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, endpoint, state string
		wantErr               bool
	}{
		{"state elsewhere", "unix://" + sockDir + "/csi.sock", filepath.Join(dir, "state"), false},
		// Warned about, not refused: the operator may have made that directory on purpose.
		{"state below the socket's directory", "unix://" + sockDir + "/csi.sock", filepath.Join(sockDir, "state"), false},
		{"state beside the socket's directory", "unix://" + sockDir + "/csi.sock", sockDir + "-state", false},
		{"state given as a symlink to the socket's directory", "unix://" + sockDir + "/csi.sock", link, true},
		{"state is the socket's directory", "unix://" + sockDir + "/csi.sock", sockDir, true},
		{"same directory written differently", sockDir + "/csi.sock", sockDir + "/", true},
		{"same directory through a symlink", "unix://" + link + "/csi.sock", sockDir, true},
		{"tcp has no socket directory", "tcp://127.0.0.1:0", sockDir, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkStateBesideSocket(zap.NewNop(), tt.endpoint, tt.state)
			if (err != nil) != tt.wantErr {
				t.Fatalf("checkStateBesideSocket(%q, %q) = %v, want error %v", tt.endpoint, tt.state, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "SHALL NOT create files next to its socket") {
				t.Fatalf("error %q does not say why", err)
			}
		})
	}
}

// shortDir is a temporary directory short enough for socket paths (t.TempDir can exceed the
// 107-byte limit).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	dir, err = filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
