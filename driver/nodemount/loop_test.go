package nodemount

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/internal/testenv"
)

// loopHelperEnv names the image a child of the test binary attaches (TestLoopHelperProcess):
// a process that attaches and exits, as a driver does before it restarts.
const loopHelperEnv = "CSIKIT_NODEMOUNT_ATTACH_LOOP"

// TestLoopHelperProcess is not a test: run by attachInChild in a child of the test binary, it
// attaches the image loopHelperEnv names and prints the device. Run as a test it does nothing
// (and does not skip, which CI would count against a run that must skip nothing).
func TestLoopHelperProcess(t *testing.T) {
	image := os.Getenv(loopHelperEnv)
	if image == "" {
		return
	}
	dev, err := AttachLoop(image)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("DEVICE=%s\n", dev)
}

// attachInChild attaches image in a child process that then exits, and returns the device.
func attachInChild(image string) (string, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoopHelperProcess$")
	cmd.Env = append(os.Environ(), loopHelperEnv+"="+image)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("child AttachLoop: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if dev, ok := strings.CutPrefix(sc.Text(), "DEVICE="); ok {
			return dev, nil
		}
	}
	return "", fmt.Errorf("child printed no device:\n%s", out)
}

// needLoop skips a test that attaches loop devices when the process cannot, and registers a
// clean-up that detaches every device on a file under dir.
func needLoop(t *testing.T, dir string) {
	t.Helper()
	testenv.Root(t, "attaches loop devices, to test against the kernel")
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		testenv.Skip(t, "no loop devices on this machine: %v", err)
	}
	t.Cleanup(func() {
		loops, err := Loops()
		if err != nil {
			t.Error(err)
			return
		}
		for _, l := range loops {
			if within(l.BackingFile, dir) {
				if err := DetachLoopDevice(l.Device); err != nil {
					t.Errorf("cleanup: %v", err)
				}
			}
		}
	})
}

// newImage creates a sparse image file of size bytes in a fresh directory whose path has no
// symbolic link in it, and returns both.
func newImage(t *testing.T, size int64) (dir, image string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	image = filepath.Join(dir, "vol.img")
	writeImage(t, image, size)
	return dir, image
}

func writeImage(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// attachedTo lists the devices Loops shows for files under dir.
func attachedTo(t *testing.T, dir string) []string {
	t.Helper()
	loops, err := Loops()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range loops {
		if within(l.BackingFile, dir) {
			out = append(out, l.Device)
		}
	}
	return out
}

// TestAttachLoopIsIdempotentAndFoundAgain: whoever attached an image (this process, a process
// that has exited since, as a driver before its restart, or losetup), FindLoop from a fresh call
// finds the device, AttachLoop returns it instead of attaching a second one, and DetachLoop
// detaches it, twice without error.
func TestAttachLoopIsIdempotentAndFoundAgain(t *testing.T) {
	tests := []struct {
		name   string
		attach func(t *testing.T, image string) string
	}{
		{"attached by AttachLoop in this process", func(t *testing.T, image string) string {
			dev, err := AttachLoop(image)
			if err != nil {
				t.Fatal(err)
			}
			return dev
		}},
		{"attached by a process that has exited", func(t *testing.T, image string) string {
			dev, err := attachInChild(image)
			if err != nil {
				t.Fatal(err)
			}
			return dev
		}},
		{"attached by losetup", func(t *testing.T, image string) string {
			losetup := testenv.Tool(t, "losetup", "mount")
			out, err := exec.Command(losetup, "--find", "--show", image).CombinedOutput()
			if err != nil {
				t.Fatalf("losetup: %v: %s", err, out)
			}
			return strings.TrimSpace(string(out))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, image := newImage(t, 8<<20)
			needLoop(t, dir)
			dev := tt.attach(t, image)
			if found, err := FindLoop(image); err != nil || found != dev {
				t.Fatalf("FindLoop = %q, %v; want %s", found, err, dev)
			}
			link := filepath.Join(dir, "link.img")
			if err := os.Symlink(image, link); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{image, link} {
				if again, err := AttachLoop(name); err != nil || again != dev {
					t.Fatalf("AttachLoop(%s) of an attached image = %q, %v; want %s", name, again, err, dev)
				}
			}
			if got := attachedTo(t, dir); len(got) != 1 {
				t.Fatalf("devices on the image: %v; want only %s", got, dev)
			}
			if size, err := DeviceSize(dev); err != nil || size != 8<<20 {
				t.Errorf("DeviceSize = %d, %v; want %d", size, err, 8<<20)
			}
			if err := os.Truncate(image, 16<<20); err != nil {
				t.Fatal(err)
			}
			if size, err := RefreshLoopSize(dev); err != nil || size != 16<<20 {
				t.Errorf("RefreshLoopSize after growing the image = %d, %v; want %d", size, err, 16<<20)
			}
			for i := range 2 {
				if err := DetachLoop(image); err != nil {
					t.Fatalf("DetachLoop #%d: %v", i+1, err)
				}
			}
			if found, err := FindLoop(image); err != nil || found != "" {
				t.Errorf("FindLoop after DetachLoop = %q, %v; want none", found, err)
			}
			if got := attachedTo(t, dir); len(got) != 0 {
				t.Errorf("devices left on the image: %v", got)
			}
		})
	}
}

// TestAttachLoopConcurrently: goroutines of this process and two other processes attach one
// image at the same time; every one of them gets the same device, and only one is attached.
func TestAttachLoopConcurrently(t *testing.T) {
	dir, image := newImage(t, 8<<20)
	needLoop(t, dir)
	const goroutines, children = 4, 2
	devs := make([]string, goroutines+children)
	errs := make([]error, goroutines+children)
	var wg sync.WaitGroup
	for i := range goroutines + children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i < goroutines {
				devs[i], errs[i] = AttachLoop(image)
			} else {
				devs[i], errs[i] = attachInChild(image)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, dev := range devs {
		if dev != devs[0] {
			t.Errorf("attach %d got %s, attach 0 got %s: one image, two devices", i, dev, devs[0])
		}
	}
	if got := attachedTo(t, dir); len(got) != 1 {
		t.Errorf("devices on the image: %v; want one", got)
	}
}

// TestLoopOfAMovedImage: the kernel follows the attached file, not its path. A renamed image
// keeps its device under its new name and none under the old; a deleted one is found, and
// detached, by the path it had; a new file created at that path is a new image.
func TestLoopOfAMovedImage(t *testing.T) {
	tests := []struct {
		name string
		// move changes the attached image and returns the path to find its device by (none:
		// the old device is not that path's image any more).
		move       func(t *testing.T, image string) (findBy string)
		oldIsFound bool
	}{
		{"renamed", func(t *testing.T, image string) string {
			renamed := filepath.Join(filepath.Dir(image), "renamed.img")
			if err := os.Rename(image, renamed); err != nil {
				t.Fatal(err)
			}
			if dev, err := FindLoop(image); err != nil || dev != "" {
				t.Errorf("FindLoop of the old name = %q, %v; want none", dev, err)
			}
			return renamed
		}, true},
		{"deleted", func(t *testing.T, image string) string {
			if err := os.Remove(image); err != nil {
				t.Fatal(err)
			}
			if _, err := AttachLoop(image); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("AttachLoop of a deleted image = %v; want an error wrapping os.ErrNotExist", err)
			}
			return image
		}, true},
		{"deleted and created again", func(t *testing.T, image string) string {
			if err := os.Remove(image); err != nil {
				t.Fatal(err)
			}
			writeImage(t, image, 4<<20)
			return image
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, image := newImage(t, 8<<20)
			needLoop(t, dir)
			old, err := AttachLoop(image)
			if err != nil {
				t.Fatal(err)
			}
			findBy := tt.move(t, image)
			found, err := FindLoop(findBy)
			if err != nil {
				t.Fatal(err)
			}
			if tt.oldIsFound != (found == old) || (!tt.oldIsFound && found != "") {
				t.Fatalf("FindLoop(%s) = %q; the old device is %s, want it found: %t", findBy, found, old, tt.oldIsFound)
			}
			if tt.oldIsFound {
				if _, err := os.Stat(findBy); err == nil {
					if again, err := AttachLoop(findBy); err != nil || again != old {
						t.Errorf("AttachLoop(%s) = %q, %v; want the device it has, %s", findBy, again, err, old)
					}
				}
			} else {
				fresh, err := AttachLoop(findBy)
				if err != nil || fresh == old || fresh == "" {
					t.Fatalf("AttachLoop of the new file = %q, %v; want a device other than the deleted file's %s", fresh, err, old)
				}
			}
			if err := DetachLoop(findBy); err != nil {
				t.Fatal(err)
			}
			left := attachedTo(t, dir)
			if tt.oldIsFound && len(left) != 0 {
				t.Errorf("devices left after DetachLoop(%s): %v", findBy, left)
			}
			if !tt.oldIsFound && (len(left) != 1 || left[0] != old) {
				t.Errorf("devices left after DetachLoop(%s): %v; want only the deleted file's %s, which is not that path's image", findBy, left, old)
			}
		})
	}
}

// TestAttachLoopRefusesWhatIsNoImage: a directory or a missing file is never attached, and the
// error says which it is.
func TestAttachLoopRefusesWhatIsNoImage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, path string
		want       error
	}{
		{"a directory", dir, driver.ErrInvalidArgument},
		{"a missing file", filepath.Join(dir, "missing.img"), os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev, err := AttachLoop(tt.path)
			if !errors.Is(err, tt.want) || dev != "" {
				t.Fatalf("AttachLoop(%s) = %q, %v; want an error wrapping %v", tt.path, dev, err, tt.want)
			}
		})
	}
}

// TestLoopBacks decides by the path the kernel names when the device cannot be asked for the
// file's inode.
func TestLoopBacks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "vol.img")
	writeImage(t, img, 4096)
	gone := filepath.Join(dir, "gone.img")
	noDevice := filepath.Join(dir, "no-such-loop") // the inode cannot be asked: the path decides
	tests := []struct {
		name, attached string
		deleted        bool
		image          string
		want           bool
	}{
		{"same path", img, false, img, true},
		{"another file", gone, false, img, false},
		{"unlinked file at the image's path", img, true, img, false},
		{"unlinked image", gone, true, gone, true},
		{"path only shares a prefix", img + "x", false, img, false},
		// A node plugin container that attached the image is gone: the kernel names the file
		// from that container's mount of the image's directory.
		{"named from a gone container's mount", strings.TrimPrefix(img, filepath.Dir(dir)), false, img, true},
		{"a suffix that is not a whole path element", "ol.img", false, img, false},
		{"a suffix of another directory", "/other/vol.img", false, img, false},
		{"a relative image path", img, false, "vol.img", true},
	}
	t.Chdir(dir)
	for _, tt := range tests {
		l := Loop{Device: noDevice, Major: 7, BackingFile: tt.attached, Deleted: tt.deleted}
		if got := l.Backs(tt.image); got != tt.want {
			t.Errorf("%s: %+v.Backs(%q) = %v, want %v", tt.name, l, tt.image, got, tt.want)
		}
	}
}
