package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodEnv is what the downward API would give a pod of the manifests.
type PodEnv struct {
	Name, Namespace, Node string // the pod's name and namespace, and the node it runs on
	Root                  string // stands for the node's / for hostPath volumes
	PodDir                string // holds the pod's emptyDir volumes
}

// Container is one container of a manifest turned into a process: its arguments with the
// variables expanded and every path inside a volume mount rewritten to where that volume lives
// on this machine.
type Container struct {
	Name string   // the container's name in the pod spec
	Args []string // command and args, expanded and rewritten
	Env  []string // the container's environment, NAME=value
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// Containers translates a pod spec of the manifests into processes, so the suite runs the
// sidecars with the manifests' own flags rather than a copy of them.
func Containers(spec *corev1.PodSpec, pe PodEnv) (map[string]Container, error) {
	vols := map[string]string{}
	for _, v := range spec.Volumes {
		switch {
		case v.HostPath != nil && v.HostPath.Path == "/dev":
			vols[v.Name] = "/dev" // loop devices are the machine's own
		case v.HostPath != nil:
			vols[v.Name] = filepath.Join(pe.Root, v.HostPath.Path)
		case v.EmptyDir != nil:
			vols[v.Name] = filepath.Join(pe.PodDir, v.Name)
		default:
			return nil, fmt.Errorf("volume %s: only hostPath and emptyDir can be run as processes", v.Name)
		}
		if err := os.MkdirAll(vols[v.Name], 0o750); err != nil {
			return nil, err
		}
	}
	out := map[string]Container{}
	for _, c := range spec.Containers {
		env := map[string]string{}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil:
				env[e.Name] = e.Value
			case e.ValueFrom.FieldRef != nil:
				switch e.ValueFrom.FieldRef.FieldPath {
				case "spec.nodeName":
					env[e.Name] = pe.Node
				case "metadata.namespace":
					env[e.Name] = pe.Namespace
				case "metadata.name":
					env[e.Name] = pe.Name
				default:
					return nil, fmt.Errorf("container %s: env %s: field %s not supported", c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
				}
			default:
				return nil, fmt.Errorf("container %s: env %s: only values and field references are supported", c.Name, e.Name)
			}
		}
		// Longest mount path first, so /var/lib/kubelet/pods wins over /var/lib/kubelet.
		mounts := slices.Clone(c.VolumeMounts)
		sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].MountPath) > len(mounts[j].MountPath) })
		rewrite := func(s string) string {
			s = varRef.ReplaceAllStringFunc(s, func(ref string) string {
				if v, ok := env[ref[2:len(ref)-1]]; ok {
					return v
				}
				return ref // kubelet leaves unknown references as they are
			})
			for _, m := range mounts {
				s = replacePath(s, m.MountPath, vols[m.Name])
			}
			return s
		}
		ct := Container{Name: c.Name}
		for _, a := range append(slices.Clone(c.Command), c.Args...) {
			ct.Args = append(ct.Args, rewrite(a))
		}
		for k, v := range env {
			ct.Env = append(ct.Env, k+"="+rewrite(v))
		}
		sort.Strings(ct.Env)
		out[c.Name] = ct
	}
	return out, nil
}

// replacePath replaces the path prefix from with to wherever from appears as a whole path
// (followed by "/", the end, or a character that cannot continue a path element).
func replacePath(s, from, to string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, from)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(from)
		whole := end == len(s) || s[end] == '/'
		b.WriteString(s[:i])
		if whole {
			b.WriteString(to)
		} else {
			b.WriteString(from)
		}
		s = s[end:]
	}
}

// WithFlag replaces every --name=value (or -name=value) in args by --name=value, or appends it.
func WithFlag(args []string, name, value string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		t := strings.TrimLeft(a, "-")
		if t == name || strings.HasPrefix(t, name+"=") {
			continue
		}
		out = append(out, a)
	}
	return append(out, "--"+name+"="+value)
}

// FlagValue returns the value of --name=value in args.
func FlagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		t := strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(t, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// LocalHTTP moves an --http-endpoint flag to a free loopback port: every container of a pod
// has its own port there, but all processes here share one network namespace with the
// machine's other programs.
func LocalHTTP(args []string) ([]string, string, error) {
	if _, ok := FlagValue(args, "http-endpoint"); !ok {
		return args, "", nil
	}
	p, err := FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p)
	return WithFlag(args, "http-endpoint", addr), addr, nil
}
