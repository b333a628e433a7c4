package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// process is the hostpath binary running on a state directory.
type process struct {
	once sync.Once
	cmd  *exec.Cmd
	sock string
	conn *grpc.ClientConn
	ctrl csi.ControllerClient
	node csi.NodeClient
}

// buildBinary compiles the driver once per test binary run.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostpath")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func startProcess(t *testing.T, bin, dir string) *process {
	t.Helper()
	sock := filepath.Join(dir, "csi.sock")
	cmd := exec.Command(bin, "--endpoint", "unix://"+sock, "--state-dir", filepath.Join(dir, "state"),
		"--nodeid", "crash-node", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Its own process group, so a kill takes mkfs and mount helpers down with it, as a
	// container kill would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, sock: sock, conn: conn, ctrl: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := csi.NewIdentityClient(conn).Probe(ctx, &csi.ProbeRequest{}, grpc.WaitForReady(true)); err != nil {
		p.kill()
		t.Fatalf("driver did not start: %v", err)
	}
	return p
}

func (p *process) kill() {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
		p.conn.Close()
	})
}

// step is one call of a volume's life; the client retries an interrupted step after a restart.
type step int

const (
	stepCreate step = iota
	stepCtrlPublish
	stepStage
	stepPublish
	stepUnpublish
	stepUnstage
	stepCtrlUnpublish
	stepDelete
	stepDone
)

// lifeOf is one volume the client drives through its whole life.
type lifeOf struct {
	name, id        string
	staging, target string
	cap             *csi.VolumeCapability
	next            step
}

func (v *lifeOf) run(ctx context.Context, p *process) error {
	var err error
	switch v.next {
	case stepCreate:
		var resp *csi.CreateVolumeResponse
		resp, err = p.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: v.name, VolumeCapabilities: []*csi.VolumeCapability{v.cap},
			CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}})
		if err == nil {
			v.id = resp.GetVolume().GetVolumeId()
		}
	case stepCtrlPublish:
		_, err = p.ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.id, NodeId: "crash-node", VolumeCapability: v.cap})
	case stepStage:
		_, err = p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging, VolumeCapability: v.cap})
	case stepPublish:
		_, err = p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging, TargetPath: v.target, VolumeCapability: v.cap})
	case stepUnpublish:
		_, err = p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target})
	case stepUnstage:
		_, err = p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.id, StagingTargetPath: v.staging})
	case stepCtrlUnpublish:
		_, err = p.ctrl.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.id, NodeId: "crash-node"})
	case stepDelete:
		_, err = p.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.id})
	}
	if err == nil {
		v.next++
	}
	return err
}

// TestCrashRecovery kills the driver with SIGKILL at random moments of a create, stage, publish,
// unpublish, unstage, delete loop, 20 times, restarting it on the same state directory. After each
// restart the volumes it lists are exactly the volumes on disk, and the interrupted call, retried,
// succeeds. At the end no volume, loop device or mount is left.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the driver 20 times")
	}
	rooted := os.Geteuid() == 0
	if !rooted {
		t.Log("not root: only the controller part (create/delete of directory volumes) is exercised; stage/publish need mounts")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	interruptedAt := map[step]int{}
	var lives []*lifeOf
	newLife := func(i int) *lifeOf {
		v := &lifeOf{name: fmt.Sprintf("crash-%03d", i), staging: filepath.Join(dir, "pods", fmt.Sprint(i), "staging"),
			target: filepath.Join(dir, "pods", fmt.Sprint(i), "target")}
		switch {
		case !rooted:
			v.cap = mountCapability("")
		case i%3 == 0:
			v.cap = mountCapability("")
		case i%3 == 1:
			v.cap = mountCapability("ext4")
		default:
			v.cap = blockCapability()
		}
		if err := os.MkdirAll(v.staging, 0o750); err != nil {
			t.Fatal(err)
		}
		return v
	}
	stepsOf := func(v *lifeOf) bool { // whether a step is needed for this run
		if rooted {
			return true
		}
		return v.next == stepCreate || v.next == stepDelete
	}
	for cycle := range 20 {
		p := startProcess(t, bin, dir)
		checkListMatchesDisk(t, p, dir)
		// Retry what the previous kill interrupted: it must now succeed.
		for _, v := range lives {
			if v.next != stepDone {
				if err := v.run(context.Background(), p); err != nil {
					p.kill()
					t.Fatalf("cycle %d: retry of %s step %d after restart: %v", cycle, v.name, v.next, err)
				}
			}
		}
		// Drive new volumes until the kill lands: each cycle aims at one step (all steps in turn),
		// killing a random 0-3 ms after that call is sent, so it lands before, inside or after
		// the driver's work on it. A timer also kills at a random moment, as a backstop.
		target := step(cycle % int(stepDone))
		if !rooted {
			target = []step{stepCreate, stepDelete}[cycle%2]
		}
		timer := time.AfterFunc(time.Duration(rng.IntN(2000)+200)*time.Millisecond, p.kill)
		for i := len(lives); ; i++ {
			v := newLife(i)
			lives = append(lives, v)
			interrupted := false
			for v.next != stepDone {
				if !stepsOf(v) {
					v.next++
					continue
				}
				if v.next == target {
					delay := time.Duration(rng.IntN(3000)) * time.Microsecond
					time.AfterFunc(delay, p.kill)
				}
				if err := v.run(context.Background(), p); err != nil {
					if c := status.Code(err); c != codes.Unavailable && c != codes.Canceled && c != codes.Unknown {
						t.Fatalf("cycle %d: %s step %d: %v", cycle, v.name, v.next, err)
					}
					interrupted = true
					interruptedAt[v.next]++
					break
				}
			}
			if interrupted {
				break
			}
		}
		timer.Stop()
		p.kill()
	}
	// Finish every life on a healthy driver, then nothing may be left.
	p := startProcess(t, bin, dir)
	checkListMatchesDisk(t, p, dir)
	for _, v := range lives {
		for v.next != stepDone {
			if !stepsOf(v) {
				v.next++
				continue
			}
			if err := v.run(context.Background(), p); err != nil {
				t.Fatalf("finishing %s step %d: %v", v.name, v.next, err)
			}
		}
	}
	checkListMatchesDisk(t, p, dir)
	p.kill()
	if left := volumeEntries(t, dir); len(left) != 0 {
		t.Fatalf("orphan volumes left on disk: %v", left)
	}
	if rooted {
		if loops := loopsUnder(t, dir); len(loops) != 0 {
			t.Fatalf("orphan loop devices left: %v", loops)
		}
		if mounts := mountsUnder(t, dir); len(mounts) != 0 {
			t.Fatalf("orphan mounts left: %v", mounts)
		}
	}
	t.Logf("%d volume lives across 20 kills; calls interrupted by step (0=create ... 7=delete): %v", len(lives), interruptedAt)
}

// volumeEntries lists the volume backings on disk (volumes/<shard>/<id>[.img]), by ID.
func volumeEntries(t *testing.T, dir string) []string {
	paths, err := filepath.Glob(filepath.Join(dir, "state", "volumes", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".img"))
	}
	slices.Sort(out)
	return out
}

func checkListMatchesDisk(t *testing.T, p *process, dir string) {
	t.Helper()
	var listed []string
	token := ""
	for {
		resp, err := p.ctrl.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: 50, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetEntries() {
			listed = append(listed, e.GetVolume().GetVolumeId())
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	slices.Sort(listed)
	if onDisk := volumeEntries(t, dir); !slices.Equal(listed, onDisk) {
		t.Fatalf("ListVolumes after restart %v, on disk %v", listed, onDisk)
	}
}

func loopsUnder(t *testing.T, dir string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(raw)), dir) {
			out = append(out, f)
		}
	}
	return out
}

func mountsUnder(t *testing.T, dir string) []string {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir) {
			out = append(out, f[4])
		}
	}
	return out
}

func mountCapability(fsType string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fsType}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func blockCapability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}
