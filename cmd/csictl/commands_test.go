package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// field digs a string out of JSON output by proto field names, e.g. field(t, out, "volume", "volume_id").
func field(t *testing.T, js string, path ...string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, js)
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %q in %s", k, js)
		}
		v = m[k]
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%v is not a string in %s", path, js)
	}
	return s
}

// leafCommands lists the path of every runnable command that calls the plugin.
func leafCommands() []string {
	var out []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() {
			out = append(out, c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&app{}))
	return out
}

// TestEveryCommand runs a whole volume lifecycle through every subcommand against the
// in-memory driver, then a bucket lifecycle in both COSI versions against the in-memory bucket
// backend (runCOSILifecycle), and checks at the end that no subcommand was left out.
func TestEveryCommand(t *testing.T) {
	p := startPlugin(t)
	dir := t.TempDir()
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	ran := map[string]bool{}
	root := newRootCmd(&app{})
	// do runs one command, asserts success and that stdout contains want.
	do := func(want string, args ...string) string {
		t.Helper()
		c, _, err := root.Find(args)
		if err != nil {
			t.Fatalf("find %v: %v", args, err)
		}
		ran[c.CommandPath()] = true
		out := p.ok(args...)
		if !strings.Contains(out, want) {
			t.Errorf("csictl %s: output lacks %q:\n%s", strings.Join(args, " "), want, out)
		}
		return out
	}
	const rwo = "mount,ext4,single-node-writer"

	do("mem.csikit.dev", "identity", "info")
	do("CONTROLLER_SERVICE", "identity", "capabilities")
	do("true", "identity", "probe")
	do("testdriver.json", "kubernetes-testdriver", filepath.Join(dir, "e2e"), "--block")
	do("will pass without writing a file", "kubernetes-testdriver", filepath.Join(dir, "e2e"), "--block")
	do("CREATE_DELETE_VOLUME", "controller", "capabilities")
	do("AVAILABLE", "controller", "capacity", "--cap", rwo)
	do("CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT", "group-controller", "capabilities")
	do("STAGE_UNSTAGE_VOLUME", "node", "capabilities")
	do("node-1", "node", "info")

	vol := field(t, do("volume_id", "volume", "create", "pvc-1", "--cap", rwo, "--cap", "block,rwo", "--size", "1Mi", "--limit", "1Gi",
		"--param", "tier=fast", "--mutable", "iops=100", "--requisite", "topology.mem.csikit.dev/zone=a",
		"--preferred", "topology.mem.csikit.dev/zone=a", "-o", "json"), "volume", "volume_id")
	vol2 := field(t, do("volume_id", "volume", "create", "pvc-2", "--cap", rwo, "--size", "1Mi", "-o", "json"), "volume", "volume_id")
	do(vol, "volume", "get", vol)
	do(vol2, "volume", "list", "--max", "1", "--all")
	do("true", "volume", "validate", vol, "--cap", rwo)
	do("memdriver/node=node-1", "volume", "publish", vol, "--node", "node-1", "--cap", rwo)
	do("staged", "node", "stage", vol, "--staging-path", staging, "--cap", rwo, "--publish-context", "memdriver/node=node-1")
	do("published", "node", "publish", vol, "--target", target, "--staging-path", staging, "--cap", rwo)
	do("BYTES", "volume", "stats", vol, "--path", target)
	do("OK", "node", "health", vol, "--path", target)
	do("STATUS", "node", "storage-health")
	do("OK", "volume", "health", vol)
	do("VOLUME", "volume", "health")
	do("2Mi", "volume", "expand", vol, "--size", "2Mi")
	do("2Mi", "node", "expand", vol, "--path", target, "--size", "2Mi")
	do("modified", "volume", "modify", vol, "--mutable", "iops=200")

	// A group holds both volumes and is emptied before it is deleted: deleting a group deletes
	// its members, and vol and vol2 are needed below.
	vg := field(t, do("volume_group_id", "volume-group", "create", "vg-1", "--param", "tier=fast", "-o", "json"), "volume_group", "volume_group_id")
	do(vol+","+vol2, "vg", "modify", vg, "--volume", vol, "--volume", vol2)
	do(vol2, "volume-group", "get", vg)
	do(vg, "volume-group", "list", "--max", "1", "--all")
	do(vg+"  0", "volume-group", "modify", vg, "--none")
	do("deleted", "volume-group", "delete", vg)

	if err := p.mem.Write(vol, 0, 8192); err != nil {
		t.Fatal(err)
	}
	snap := field(t, do("snapshot_id", "snapshot", "create", "snap-1", "--source", vol, "-o", "json"), "snapshot", "snapshot_id")
	if err := p.mem.Write(vol, 1<<20, 4096); err != nil {
		t.Fatal(err)
	}
	snap2 := field(t, do("snapshot_id", "snapshot", "create", "snap-2", "--source", vol, "-o", "json"), "snapshot", "snapshot_id")
	do(snap, "snapshot", "get", snap)
	do(snap2, "snapshot", "list", "--source", vol)
	do("4096", "metadata", "allocated", snap)
	do("1048576", "metadata", "delta", snap, snap2)
	do("snapshot:"+snap, "volume", "create", "pvc-3", "--cap", rwo, "--from-snapshot", snap)
	do("volume:"+vol2, "volume", "create", "pvc-4", "--cap", rwo, "--from-volume", vol2)

	gs := do("group_snapshot_id", "group-snapshot", "create", "gs-1", "--volume", vol, "--volume", vol2, "-o", "json")
	gsID := field(t, gs, "group_snapshot", "group_snapshot_id")
	var members struct {
		GroupSnapshot struct {
			Snapshots []struct {
				SnapshotID string `json:"snapshot_id"`
			} `json:"snapshots"`
		} `json:"group_snapshot"`
	}
	if err := json.Unmarshal([]byte(gs), &members); err != nil {
		t.Fatal(err)
	}
	var memberFlags []string
	for _, s := range members.GroupSnapshot.Snapshots {
		memberFlags = append(memberFlags, "--snapshot", s.SnapshotID)
	}
	do(gsID, append([]string{"group-snapshot", "get", gsID}, memberFlags...)...)
	do("deleted", append([]string{"group-snapshot", "delete", gsID}, memberFlags...)...)

	do("unpublished", "node", "unpublish", vol, "--target", target)
	do("unstaged", "node", "unstage", vol, "--staging-path", staging)
	do("unpublished from node", "volume", "unpublish", vol, "--node", "node-1")
	do("all nodes", "volume", "unpublish", vol2)
	do("deleted", "snapshot", "delete", snap)
	do("deleted", "volume", "delete", vol2)

	runCOSILifecycle(t, ran)

	var missed []string
	for _, path := range leafCommands() {
		if !ran[path] && !strings.HasPrefix(path, "csictl completion") && path != "csictl help" {
			missed = append(missed, path)
		}
	}
	if len(missed) > 0 {
		t.Errorf("subcommands never run by this test: %v", missed)
	}
}

// TestGolden pins the table, json and yaml forms of the most used commands. The memdriver's
// IDs are sequential and its clock is fixed, so the output is the same on every run.
func TestGolden(t *testing.T) {
	p := startPlugin(t)
	vol := field(t, p.ok("volume", "create", "pvc-a", "--cap", "mount,ext4,rwo", "--size", "1Gi", "--param", "tier=fast", "-o", "json"), "volume", "volume_id")
	p.ok("volume", "create", "pvc-b", "--cap", "block,rwx", "--size", "512Mi")
	p.ok("volume", "publish", vol, "--node", "node-1", "--cap", "mount,ext4,rwo")
	if err := p.mem.Write(vol, 4096, 12288); err != nil {
		t.Fatal(err)
	}
	snap := field(t, p.ok("snapshot", "create", "snap-a", "--source", vol, "-o", "json"), "snapshot", "snapshot_id")
	// One group with a member and one empty, so the golden files show both; made after the
	// snapshot so that the IDs in the older golden files stay as they were.
	vg := field(t, p.ok("volume-group", "create", "vg-a", "-o", "json"), "volume_group", "volume_group_id")
	p.ok("volume-group", "modify", vg, "--volume", vol)
	p.ok("volume-group", "create", "vg-b")

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"identity-info.table", []string{"identity", "info"}},
		{"identity-info.json", []string{"identity", "info", "-o", "json"}},
		{"volume-list.table", []string{"volume", "list"}},
		{"volume-list.json", []string{"volume", "list", "-o", "json"}},
		{"volume-list.yaml", []string{"volume", "list", "-o", "yaml"}},
		{"volume-get.yaml", []string{"volume", "get", vol, "-o", "yaml"}},
		{"snapshot-list.table", []string{"snapshot", "list"}},
		{"snapshot-list.json", []string{"snapshot", "list", "-o", "json"}},
		{"volume-group-list.table", []string{"volume-group", "list"}},
		{"volume-group-list.json", []string{"volume-group", "list", "-o", "json"}},
		{"metadata-allocated.table", []string{"metadata", "allocated", snap, "--max-results", "2"}},
		{"metadata-allocated.yaml", []string{"metadata", "allocated", snap, "--max-results", "1", "-o", "yaml"}},
		{"volume-delete.table", []string{"volume", "delete", "vol-unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, p.ok(tc.args...))
		})
	}
}

// TestUsageErrors checks that a wrong command line exits 2 with the error and the usage of the
// command on stderr, and never calls the plugin.
func TestUsageErrors(t *testing.T) {
	p := startPlugin(t)
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string // replaces the plugin's environment when set
		want string
	}{
		{"unknown flag", []string{"volume", "list", "--bogus"}, nil, "unknown flag: --bogus"},
		{"missing argument", []string{"volume", "get"}, nil, "takes 1 argument(s) (VOLUME_ID), got 0"},
		{"extra argument", []string{"identity", "info", "x"}, nil, "takes 0 argument(s)"},
		{"cap without access mode", []string{"volume", "create", "v", "--cap", "mount,ext4"}, nil, "no access mode"},
		{"cap with two access types", []string{"volume", "create", "v", "--cap", "mount,block,rwo"}, nil, "access type given twice"},
		{"block cap with fstype", []string{"volume", "create", "v", "--cap", "block,ext4,rwo"}, nil, "block volume takes no filesystem type"},
		{"no cap", []string{"volume", "create", "v"}, nil, "at least one --cap"},
		{"bad size", []string{"volume", "create", "v", "--cap", "rwo", "--size", "1.5Gi"}, nil, "invalid size"},
		{"size above limit", []string{"volume", "create", "v", "--cap", "rwo", "--size", "2Gi", "--limit", "1Gi"}, nil, "larger than --limit"},
		{"param without value", []string{"volume", "create", "v", "--cap", "rwo", "--param", "tier"}, nil, "want key=value"},
		{"duplicate param", []string{"volume", "create", "v", "--cap", "rwo", "--param", "a=1", "--param", "a=2"}, nil, "given twice"},
		{"two sources", []string{"volume", "create", "v", "--cap", "rwo", "--from-volume", "a", "--from-snapshot", "b"}, nil, "from-snapshot"},
		{"required flag", []string{"volume", "expand", "v"}, nil, `required flag(s) "size" not set`},
		{"negative max", []string{"volume", "list", "--max", "-1"}, nil, "must not be negative"},
		{"group membership not given", []string{"volume-group", "modify", "vg-1"}, nil, "[volume none] is required"},
		{"none switched off", []string{"volume-group", "modify", "vg-1", "--none=false"}, nil, "--none=false"},
		{"group members and none", []string{"volume-group", "modify", "vg-1", "--volume", "v", "--none"}, nil, "none of the others can be"},
		{"group member twice", []string{"volume-group", "modify", "vg-1", "--volume", "v", "--volume", "v"}, nil, `--volume: "v" given twice`},
		{"empty group member", []string{"volume-group", "modify", "vg-1", "--volume", ""}, nil, "empty volume ID"},
		{"group list negative max", []string{"vg", "list", "--max", "-1"}, nil, "must not be negative"},
		{"missing group ID", []string{"volume-group", "get"}, nil, "takes 1 argument(s) (VOLUME_GROUP_ID), got 0"},
		{"unknown command", []string{"volume", "lsit"}, nil, `did you mean list?`},
		{"unknown top-level command", []string{"volumes2"}, nil, `unknown command "volumes2"`},
		{"missing subcommand", []string{"snapshot"}, nil, "missing subcommand"},
		{"bad output", []string{"identity", "info", "-o", "xml"}, nil, `invalid --output "xml"`},
		{"no endpoint", []string{"identity", "info"}, map[string]string{}, "no endpoint"},
		{"relative endpoint", []string{"identity", "info", "--endpoint", "unix://csi.sock"}, nil, "--endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.mu.Lock()
			before := len(p.requests)
			p.mu.Unlock()
			env := p.env
			if tc.env != nil {
				p.env = tc.env
				defer func() { p.env = env }()
			}
			r := p.run(tc.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "Usage:") {
				t.Errorf("stderr lacks %q and the usage:\n%s", tc.want, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty:\n%s", r.stdout)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if len(p.requests) != before {
				t.Errorf("a bad command line reached the plugin: %v", p.requests[before:])
			}
		})
	}
}

// TestCallErrors checks that a failed call prints "Error: CODE: message" and exits 1.
func TestCallErrors(t *testing.T) {
	p := startPlugin(t)
	vol := field(t, p.ok("volume", "create", "pvc-1", "--cap", "rwo", "--size", "1Mi", "-o", "json"), "volume", "volume_id")
	vg := field(t, p.ok("volume-group", "create", "vg-1", "-o", "json"), "volume_group", "volume_group_id")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"volume not found", []string{"volume", "get", "nonexistent"}, "Error: NOT_FOUND: "},
		{"snapshot not found", []string{"snapshot", "get", "nonexistent"}, "Error: NOT_FOUND: "},
		{"volume group not found", []string{"volume-group", "get", "nonexistent"}, "Error: NOT_FOUND: "},
		{"modify an unknown group", []string{"volume-group", "modify", "nonexistent", "--none"}, "Error: NOT_FOUND: "},
		{"unknown group member", []string{"volume-group", "modify", vg, "--volume", "nonexistent"}, "Error: NOT_FOUND: "},
		{"group with other parameters", []string{"volume-group", "create", "vg-1", "--param", "tier=slow"}, "Error: ALREADY_EXISTS: "},
		{"validation by the plugin", []string{"volume", "create", "bad\x01name", "--cap", "rwo"}, "Error: INVALID_ARGUMENT: "},
		{"same name, other size", []string{"volume", "create", "pvc-1", "--cap", "rwo", "--size", "2Mi"}, "Error: ALREADY_EXISTS: "},
		{"publish to an unknown node", []string{"volume", "publish", vol, "--node", "nowhere", "--cap", "rwo"}, "Error: NOT_FOUND: "},
		{"bad starting token", []string{"volume", "list", "--starting-token", "forged"}, "Error: ABORTED: "},
		{"stream error", []string{"metadata", "allocated", "nonexistent"}, "Error: NOT_FOUND: "},
		{"plugin not listening", []string{"identity", "probe", "--endpoint", filepath.Join(t.TempDir(), "none.sock")}, "Error: UNAVAILABLE: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := p.run(tc.args...)
			if r.code != exitFail {
				t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, exitFail, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting %q", r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "Usage:") {
				t.Errorf("a failed call printed the usage:\n%s", r.stderr)
			}
		})
	}
}

// TestSecrets checks that secrets come only from the secrets file (flag or environment), reach
// every request that takes them, and are printed nowhere: not in any output format, not in an
// error, not when the file is malformed.
func TestSecrets(t *testing.T) {
	p := startPlugin(t)
	dir := t.TempDir()
	const value = "s3cr3t-value-7f2a"
	yamlFile := filepath.Join(dir, "secrets.yaml")
	jsonFile := filepath.Join(dir, "secrets.json")
	badFile := filepath.Join(dir, "bad.yaml")
	for path, content := range map[string]string{
		yamlFile: "username: admin\npassword: " + value + "\n",
		jsonFile: `{"username": "admin", "password": "` + value + `"}`,
		badFile:  "- " + value + "\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lastSecrets := func() map[string]string {
		p.mu.Lock()
		defer p.mu.Unlock()
		last := p.requests[len(p.requests)-1]
		if r, ok := last.(interface{ GetSecrets() map[string]string }); ok {
			return r.GetSecrets()
		}
		return nil
	}
	check := func(t *testing.T, r result) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, value) {
			t.Errorf("secret printed:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		env  string // CSI_SECRETS_FILE
	}{
		{"yaml file by flag", []string{"--secrets-file", yamlFile}, ""},
		{"json file by flag", []string{"--secrets-file", jsonFile}, ""},
		{"file from environment", nil, yamlFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.env[envSecretsFile] = tc.env
			defer delete(p.env, envSecretsFile)
			for _, format := range []string{"table", "json", "yaml"} {
				r := p.run(append([]string{"volume", "create", "pvc-" + format, "--cap", "rwo", "-o", format}, tc.args...)...)
				if r.code != exitOK {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				check(t, r)
				if got := lastSecrets(); got["password"] != value || got["username"] != "admin" {
					t.Errorf("CreateVolume secrets = %v, want the file's", got)
				}
			}
			// A failing call with secrets: the error names the volume, never the secret.
			r := p.run(append([]string{"volume", "expand", "nonexistent", "--size", "1Gi"}, tc.args...)...)
			if r.code != exitFail {
				t.Errorf("exit %d, want %d: %s", r.code, exitFail, r.stderr)
			}
			check(t, r)
		})
	}
	t.Run("volume group calls", func(t *testing.T) {
		// The volume-group requests are another proto package; secrets reach them too.
		for _, args := range [][]string{{"volume-group", "create", "vg-s"}, {"volume-group", "list", "-o", "json"}} {
			r := p.run(append(args, "--secrets-file", yamlFile)...)
			if r.code != exitOK {
				t.Fatalf("csictl %v: exit %d: %s", args, r.code, r.stderr)
			}
			check(t, r)
			if got := lastSecrets(); got["password"] != value {
				t.Errorf("csictl %v: secrets = %v, want the file's", args, got)
			}
		}
	})
	t.Run("calls without secrets get none", func(t *testing.T) {
		p.ok("volume", "create", "pvc-plain", "--cap", "rwo")
		if got := lastSecrets(); len(got) != 0 {
			t.Errorf("secrets sent without a secrets file: %v", got)
		}
	})
	t.Run("malformed file", func(t *testing.T) {
		r := p.run("volume", "create", "pvc-x", "--cap", "rwo", "--secrets-file", badFile)
		if r.code != exitFail || !strings.Contains(r.stderr, "not a YAML or JSON map") {
			t.Errorf("exit %d, stderr %q; want exit 1 and a parse error", r.code, r.stderr)
		}
		check(t, r)
	})
	t.Run("missing file", func(t *testing.T) {
		r := p.run("volume", "delete", "v", "--secrets-file", filepath.Join(dir, "absent"))
		if r.code != exitFail || !strings.Contains(r.stderr, "read secrets file") {
			t.Errorf("exit %d, stderr %q; want exit 1 and a read error", r.code, r.stderr)
		}
	})
	t.Run("no secrets flag on any command", func(t *testing.T) {
		// Secrets on the command line would land in shell history and ps output.
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name != "secrets-file" && strings.Contains(strings.ToLower(f.Name), "secret") {
					t.Errorf("%s has flag --%s", c.CommandPath(), f.Name)
				}
			})
			for _, s := range c.Commands() {
				walk(s)
			}
		}
		walk(newRootCmd(&app{}))
	})
}

// TestCompletion checks cobra's completion command and the dynamic ID completion.
func TestCompletion(t *testing.T) {
	p := startPlugin(t)
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if out := p.ok("completion", shell); !strings.Contains(out, "csictl") {
			t.Errorf("completion %s: no script:\n%.200s", shell, out)
		}
	}
	vol := field(t, p.ok("volume", "create", "pvc-1", "--cap", "rwo", "-o", "json"), "volume", "volume_id")
	out := p.ok("__complete", "volume", "get", "")
	if !slices.Contains(strings.Split(out, "\n"), vol) {
		t.Errorf("volume IDs not completed:\n%s", out)
	}
	vg := field(t, p.ok("volume-group", "create", "vg-1", "-o", "json"), "volume_group", "volume_group_id")
	out = p.ok("__complete", "volume-group", "get", "")
	if !slices.Contains(strings.Split(out, "\n"), vg) {
		t.Errorf("volume group IDs not completed:\n%s", out)
	}
	out = p.ok("__complete", "vg", "modify", vg, "--volume", "")
	if !slices.Contains(strings.Split(out, "\n"), vol) {
		t.Errorf("--volume of volume-group modify not completed:\n%s", out)
	}
	out = p.ok("__complete", "volume", "list", "-o", "")
	for _, f := range []string{outputTable, outputJSON, outputYAML} {
		if !strings.Contains(out, f+"\n") {
			t.Errorf("-o %s not completed:\n%s", f, out)
		}
	}
	// No endpoint: no suggestions and no error text in the shell.
	p.env = map[string]string{}
	r := p.run("__complete", "volume", "get", "")
	if r.code != exitOK || strings.Contains(r.stdout, "vol") {
		t.Errorf("completion without endpoint: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestHelp checks that asking for help succeeds on stdout.
func TestHelp(t *testing.T) {
	p := startPlugin(t)
	for _, args := range [][]string{{"--help"}, {"volume", "create", "--help"}, {"help", "snapshot"}} {
		if out := p.ok(args...); !strings.Contains(out, "Usage:") {
			t.Errorf("csictl %v: no usage:\n%s", args, out)
		}
	}
}

// TestCapabilityRoundTrip checks that the table form of a capability parses back to itself.
func TestCapabilityRoundTrip(t *testing.T) {
	for _, in := range []string{"mount,ext4,flag=noatime,group=1000,single-node-writer", "block,multi-node-multi-writer", "mount,single-node-reader-only"} {
		c, err := parseCap(in)
		if err != nil {
			t.Fatalf("parseCap(%q): %v", in, err)
		}
		if got := capability(c); got != in {
			t.Errorf("capability(parseCap(%q)) = %q", in, got)
		}
		if c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN {
			t.Errorf("%q: no mode", in)
		}
	}
}
