package drivertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"

	vgpb "github.com/IBM/csi-volume-group/lib/go/volumegroup"
	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csikit/csikit/driver/drivertest/internal/canary"
	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
	"github.com/csikit/csikit/driver/drivertest/internal/vgsuite"
	"github.com/csikit/csikit/driver/plugin"
)

// Options describe the driver under test and the run. The zero value runs the unprivileged profile
// with csi-sanity's defaults and every csikit spec.
type Options struct {
	// Privileged runs the specs that need real mounts. The process must be root (the run is
	// skipped otherwise) and the driver must really mount; whatever is still mounted under a
	// spec's directories when it ends is unmounted before they are removed. When false, exactly
	// the specs listed by MountSpecs are skipped, each with its reason, unless NoMounts is set.
	Privileged bool
	// NoMounts declares that the node service mounts nothing: it records stage and publish and
	// creates the target path, as an in-memory or fake backend does. The specs that stage and
	// publish then run in the unprivileged profile too, because they need no privilege.
	NoMounts bool

	// The fields below are passed to csi-sanity's TestConfig (zero means csi-sanity's default).
	//
	// TestVolumeSize is the capacity requested for test volumes (default 10 GiB).
	TestVolumeSize int64
	// TestVolumeExpandSize is the capacity asked for by expansion (default TestVolumeSize + 1 GiB).
	TestVolumeExpandSize int64
	// TestVolumeParameters are the CreateVolume parameters (a StorageClass).
	TestVolumeParameters map[string]string
	// TestVolumeMutableParameters are the mutable parameters used by the ModifyVolume specs (a
	// VolumeAttributesClass); drivers with MODIFY_VOLUME need a set they accept.
	TestVolumeMutableParameters map[string]string
	// TestSnapshotParameters are the CreateSnapshot parameters (a VolumeSnapshotClass).
	TestSnapshotParameters map[string]string
	// TestVolumeAccessType is "mount" (default) or "block".
	TestVolumeAccessType string
	// TestNodeVolumeAttachLimit enables csi-sanity's attach-limit spec.
	TestNodeVolumeAttachLimit bool
	// Secrets are sent with the calls that take secrets, per RPC. Values of at least 8 bytes are
	// also searched for in the driver's logs at the end of the run.
	Secrets *sanity.CSISecrets
	// IDGen makes valid and invalid volume and node IDs (default csi-sanity's generator).
	IDGen sanity.IDGenerator
	// IdempotentCount is how often csi-sanity repeats calls in its idempotency specs (default
	// 10; negative disables those specs).
	IdempotentCount int

	// WorkDir is where the run makes the temporary root of the specs' target and staging
	// directories; default os.TempDir(). Set it when the driver sees the filesystem elsewhere.
	WorkDir string
	// Logs returns everything the plugin has logged so far, for the secret canary. CSI captures
	// what the library logs itself and adds these (give them when the backend logs through a
	// logger of its own); for CSIEndpoint, nil means log lines are not searched.
	Logs func() string
	// VolumeGroups says what the volume-group specs (CheckVolumeGroups) may expect of a plugin
	// that serves volumegroup.Controller beyond what the volume-group spec demands of every one.
	VolumeGroups VolumeGroupOptions
	// Disable switches off csikit's own spec groups, each with the reason to print.
	Disable map[Check]string
	// Configure, when set, may change the csi-sanity configuration last (an escape hatch for the
	// fields not lifted into Options).
	Configure func(*sanity.TestConfig)
}

// Check names a group of csikit's own specs, added to the csi-sanity suite.
type Check string

// csikit's own spec groups; all run by default. See the package documentation.
const (
	CheckPagination    Check = "pagination"
	CheckGroupSnapshot Check = "group-snapshot"
	CheckConcurrency   Check = "concurrency"
	CheckIdempotency   Check = "idempotency"
	CheckSecretCanary  Check = "secret-canary"
)

// suiteDescription names the Ginkgo suite; Ginkgo matches skip expressions against it followed by
// a space and the spec's full text.
const suiteDescription = "csikit conformance (csi-sanity v5.6.0 + csikit specs)"

// Result counts the specs of one run of CSI, CSIEndpoint, COSI or COSIEndpoint.
//
// A CSI spec is one of csi-sanity's or csikit's, named by its full text. A COSI spec is one rule
// of one wire version, named "<version>/<rule>". A version whose own set-up fails counts as one
// failed spec, named after the version: its DriverGetInfo, first bucket and grant, and their
// clean-up. A driver that serves no COSI version at all counts as one, named "COSI".
type Result struct {
	// Ran, Passed, Skipped and Failed count specs: Ran == Passed + Failed. Skipped counts apart
	// what never ran, each with its reason in Skips, so a test can assert on exactly the skips
	// it expects. CSI skips a capability the plugin does not advertise, a spec the profile or
	// Options.Disable leaves out, and a spec csi-sanity disables itself. COSI skips a rule that
	// needs what the driver does not do (grants), or an option not given (CheckCredentials, ...).
	// It skips every rule of a version the driver does not serve, or whose set-up failed.
	Ran, Passed, Skipped, Failed int
	// Skips maps the name of each skipped spec to the reason it was skipped.
	Skips map[string]string
	// Failures maps the name of each failed spec to its failure messages (for COSI, scrubbed
	// of every credential the suite has seen).
	Failures map[string]string
}

var (
	// Ginkgo runs one suite per process: RunSpecs exits the process when called twice.
	runOnce sync.Mutex
	ran     bool
	// current is the run the csikit specs (registered at init) read their options from.
	currentMu sync.Mutex
	current   *run
)

// registerSpecs adds csikit's spec groups to csi-sanity's suite (sanity.DescribeSanity), in a
// fixed order, once per process, just before the suite is built: set-up code of the run rather
// than package initialisation writing into csi-sanity's table whenever drivertest is linked.
var registerSpecs = sync.OnceFunc(func() {
	csisuite.DescribeSecretCanary(activeRun, string(CheckSecretCanary))
	csisuite.DescribePagination(activeRun, string(CheckPagination))
	csisuite.DescribeGroupSnapshot(activeRun, string(CheckGroupSnapshot))
	csisuite.DescribeConcurrency(activeRun, string(CheckConcurrency))
	csisuite.DescribeIdempotency(activeRun, string(CheckIdempotency))
	vgsuite.DescribeSpecs(activeRun, string(CheckVolumeGroups), volumeGroupOptions)
	vgsuite.DescribeCanary(activeRun, string(CheckSecretCanary), volumeGroupOptions)
})

// activeRun returns the run the csikit specs belong to, or nil when the suite was started by
// something other than CSI or CSIEndpoint (the specs are registered with csi-sanity globally).
func activeRun() csisuite.Run {
	currentMu.Lock()
	defer currentMu.Unlock()
	if current == nil {
		return nil // a nil *run in the interface would not be nil
	}
	return current
}

// volumeGroupOptions are the volume-group options of the active run.
func volumeGroupOptions() vgsuite.Options {
	currentMu.Lock()
	defer currentMu.Unlock()
	if current == nil {
		return vgsuite.Options{}
	}
	return vgsuite.Options(current.opts.VolumeGroups)
}

// CSI runs csi-sanity v5.6.0 in-process, plus csikit's own specs, against a plugin built from cfg.
// NewServer serves the plugin until the test ends; what it captures of the plugin's log at debug
// level (beside cfg.Logger when that is set) feeds the secret canary. When the backend logs
// through a logger of its own, give those logs as Options.Logs too: the canary then searches
// both.
//
// Ginkgo runs one suite per process, so CSI (or CSIEndpoint) may be called once per test binary;
// a second call fails the test. Put each driver's conformance test in its own package.
func CSI(t *testing.T, cfg plugin.Config, opts Options) Result {
	t.Helper()
	srv := NewServer(t, cfg)
	if backendLogs := opts.Logs; backendLogs != nil {
		opts.Logs = func() string { return srv.Logs() + "\n" + backendLogs() }
	} else {
		opts.Logs = srv.Logs
	}
	return CSIEndpoint(t, srv.Endpoint, opts)
}

// CSIEndpoint runs the same suite as CSI against an already running plugin at endpoint, e.g.
// "unix:///run/csi/csi.sock". The secret canary reads the plugin's logs from Options.Logs.
func CSIEndpoint(t *testing.T, endpoint string, opts Options) Result {
	t.Helper()
	runOnce.Lock()
	defer runOnce.Unlock()
	if ran {
		t.Fatal("drivertest: CSI or CSIEndpoint already ran in this test binary; Ginkgo runs one suite per process, so put each conformance run in its own package")
	}
	if opts.Privileged && os.Geteuid() != 0 {
		t.Skip("drivertest: the privileged profile needs root (real mounts); run the test as root or use the unprivileged profile")
	}
	ran = true

	r, err := newRun(t, opts)
	if err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	cfg := sanity.NewTestConfig()
	cfg.Address = endpoint
	if err := r.configure(&cfg); err != nil {
		t.Fatalf("drivertest: %v", err)
	}

	currentMu.Lock()
	current = r
	currentMu.Unlock()
	defer func() {
		currentMu.Lock()
		current = nil
		currentMu.Unlock()
	}()

	registerSpecs()
	sc := sanity.GinkgoTest(&cfg)
	defer sc.Finalize()
	var report types.Report
	ginkgo.AfterEach(func() {
		// Runs after csi-sanity's Teardown (inner nodes first), which ignores errors of the
		// directory hooks; they fail the spec here.
		errs, leftovers := r.takeCleanupErrors(), r.takeLeftovers()
		if len(errs) > 0 {
			ginkgo.Fail("cleaning up the spec's directories: " + errors.Join(errs...).Error())
		}
		// After a spec that passed, its cleanup has unpublished and unstaged every volume it
		// used, so a mount still there is one the driver failed to undo. After a failure it
		// is just what the failure left behind.
		if len(leftovers) > 0 && !ginkgo.CurrentSpecReport().Failed() {
			ginkgo.Fail("still mounted after NodeUnpublishVolume and NodeUnstageVolume succeeded (unmounted by drivertest): " + strings.Join(leftovers, ", "))
		}
	})
	ginkgo.ReportAfterSuite("drivertest summary", func(rep ginkgo.Report) { report = rep })

	// csi-sanity logs through klog; keep its lines with the spec they belong to (printed when
	// the spec fails) instead of on stderr.
	klog.LogToStderr(false)
	klog.SetOutput(ginkgo.GinkgoWriter)
	defer klog.LogToStderr(true)

	gomega.RegisterFailHandler(ginkgo.Fail)
	suiteConfig, reporterConfig := ginkgo.GinkgoConfiguration()
	reporterConfig.NoColor = true
	// Skipped by name before the suite starts, so none of their setup or cleanup runs.
	suiteConfig.SkipStrings = append(suiteConfig.SkipStrings, r.skipPatterns()...)
	ginkgo.RunSpecs(t, suiteDescription, suiteConfig, reporterConfig)

	res := r.summarize(report)
	r.reportCanaryCoverage()
	r.checkSecretsInLogs()
	return res
}

// run is the state of one conformance run, shared by the hooks and the csikit specs.
type run struct {
	t    *testing.T
	opts Options
	root string

	mu           sync.Mutex
	cleanupErrs  []error
	leftovers    []string // mount points found below a spec's directories
	canaryValues []string
	canarySent   map[string]bool
}

// Logs returns what the plugin logged so far, and false when Options.Logs is nil.
func (r *run) Logs() (string, bool) {
	if r.opts.Logs == nil {
		return "", false
	}
	return r.opts.Logs(), true
}

// AddCanary records what a canary spec sent, for the sweep of the logs at the end of the run.
func (r *run) AddCanary(values, sent []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.canaryValues = append(r.canaryValues, values...)
	if r.canarySent == nil {
		r.canarySent = map[string]bool{}
	}
	for _, s := range sent {
		r.canarySent[s] = true
	}
}

// reportCanaryCoverage says which request types with secrets the canary exercised.
func (r *run) reportCanaryCoverage() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.canarySent == nil {
		return
	}
	all := append(canary.RequestsWithSecrets(csi.File_csi_proto), canary.RequestsWithSecrets(vgpb.File_volumegroup_volumegroup_proto)...)
	var missing []string
	for _, name := range all {
		if !r.canarySent[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		r.t.Logf("drivertest: secret canary sent secrets with all %d request types that have them", len(all))
		return
	}
	r.t.Logf("drivertest: secret canary sent secrets with %d of %d request types that have them; not sent (not advertised, or their spec was skipped): %s",
		len(all)-len(missing), len(all), strings.Join(missing, ", "))
}

// checkSecretsInLogs searches everything the plugin logged during the run, cleanup included, for
// the canary values and the configured secrets (values of at least 8 bytes: shorter ones would
// match by chance).
func (r *run) checkSecretsInLogs() {
	if r.opts.Logs == nil {
		r.t.Log("drivertest: no Options.Logs: the plugin's logs were not searched for secrets")
		return
	}
	logs := r.opts.Logs()
	r.mu.Lock()
	values := slices.Clone(r.canaryValues)
	r.mu.Unlock()
	for _, v := range append(configuredSecrets(r.opts.Secrets), slices.Collect(maps.Values(r.opts.VolumeGroups.Secrets))...) {
		if len(v) >= 8 {
			values = append(values, v)
		}
	}
	for _, v := range values {
		if n := strings.Count(logs, v); n > 0 {
			r.t.Errorf("drivertest: a secret value appears %d times in the plugin's logs", n)
		}
	}
}

// configuredSecrets lists every value of every secrets map in s.
func configuredSecrets(s *sanity.CSISecrets) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, m := range []map[string]string{s.CreateVolumeSecret, s.DeleteVolumeSecret, s.ControllerPublishVolumeSecret,
		s.ControllerUnpublishVolumeSecret, s.ControllerValidateVolumeCapabilitiesSecret, s.NodeStageVolumeSecret,
		s.NodePublishVolumeSecret, s.CreateSnapshotSecret, s.DeleteSnapshotSecret, s.ControllerExpandVolumeSecret,
		s.ControllerModifyVolumeSecret, s.ListSnapshotsSecret, s.GetSnapshotSecret} {
		for _, v := range m {
			out = append(out, v)
		}
	}
	return out
}

func newRun(t *testing.T, opts Options) (*run, error) {
	// Not t.TempDir: its cleanup would remove files through anything left mounted below.
	dir, err := os.MkdirTemp(opts.WorkDir, "drivertest-")
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	// Mount tables hold resolved paths; compare like with like.
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	r := &run{t: t, opts: opts, root: root}
	t.Cleanup(func() {
		if err := r.unmountBelow(root); err != nil {
			t.Errorf("drivertest: %v; %s not removed", err, root)
			return
		}
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("drivertest: %v", err)
		}
	})
	return r, nil
}

// configure fills csi-sanity's configuration from the options.
func (r *run) configure(cfg *sanity.TestConfig) error {
	o := r.opts
	if o.TestVolumeSize > 0 {
		cfg.TestVolumeSize = o.TestVolumeSize
	}
	if o.TestVolumeExpandSize > 0 {
		cfg.TestVolumeExpandSize = o.TestVolumeExpandSize
	}
	cfg.TestVolumeParameters = o.TestVolumeParameters
	cfg.TestVolumeMutableParameters = o.TestVolumeMutableParameters
	cfg.TestSnapshotParameters = o.TestSnapshotParameters
	if o.TestVolumeAccessType != "" {
		cfg.TestVolumeAccessType = o.TestVolumeAccessType
	}
	cfg.TestNodeVolumeAttachLimit = o.TestNodeVolumeAttachLimit
	if o.IDGen != nil {
		cfg.IDGen = o.IDGen
	}
	switch {
	case o.IdempotentCount > 0:
		cfg.IdempotentCount = o.IdempotentCount
	case o.IdempotentCount < 0:
		cfg.IdempotentCount = 0
	}
	if o.Secrets != nil {
		// csi-sanity only reads secrets from a YAML file. JSON is YAML, and CSISecrets' field
		// names are its YAML keys.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(o.Secrets); err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		file := filepath.Join(r.t.TempDir(), "secrets.yaml")
		if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
			return fmt.Errorf("secrets: %w", err)
		}
		cfg.SecretsFile = file
	}
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(sendCopy))
	cfg.ControllerDialOptions = append(cfg.ControllerDialOptions, grpc.WithChainUnaryInterceptor(sendCopy))
	r.configurePaths(cfg)
	if o.Configure != nil {
		o.Configure(cfg)
	}
	return nil
}

func (r *run) addCleanupError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanupErrs = append(r.cleanupErrs, err)
}

func (r *run) addLeftovers(points []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leftovers = append(r.leftovers, points...)
}

func (r *run) takeLeftovers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.leftovers
	r.leftovers = nil
	return l
}

func (r *run) takeCleanupErrors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := r.cleanupErrs
	r.cleanupErrs = nil
	return errs
}

// sendCopy sends a copy of each request, leaving the caller's message as it was. csi-sanity
// v5.6.0 compares proto messages with reflect.DeepEqual (gomega's Equal), and marshalling a
// message stores a size cache inside it: its "snapshot with accessibility requirements" spec
// would fail for every driver that reports the requested topology back, because the topology it
// compares against was marshalled into the request.
func sendCopy(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if m, ok := req.(proto.Message); ok {
		req = proto.Clone(m)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// summarize counts the specs, prints every skip with its reason, and checks that every entry of
// the mount-spec table named a real spec (a renamed spec would otherwise silently run).
func (r *run) summarize(rep ginkgo.Report) Result {
	t := r.t
	res := Result{Skips: map[string]string{}, Failures: map[string]string{}}
	seen := map[string]bool{}
	for _, s := range rep.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			continue
		}
		name := s.FullText()
		seen[name] = true
		switch {
		case s.State == types.SpecStatePending:
			res.Skipped++
			res.Skips[name] = "disabled in csi-sanity itself (XIt)"
		case s.State == types.SpecStateSkipped:
			res.Skipped++
			reason, ok := r.skipReason(name)
			if !ok {
				reason = strings.TrimSpace(s.Failure.Message)
			}
			if reason == "" {
				reason = "skipped by a -ginkgo.skip or -ginkgo.focus flag"
			}
			res.Skips[name] = reason
		case s.State == types.SpecStatePassed:
			res.Ran++
			res.Passed++
		case s.State.Is(types.SpecStateFailureStates):
			res.Ran++
			res.Failed++
			res.Failures[name] = s.Failure.Message
		}
	}
	names := make([]string, 0, len(res.Skips))
	for n := range res.Skips {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t.Logf("skipped: %s: %s", n, res.Skips[n])
	}
	for _, m := range MountSpecs() {
		if !seen[m.Spec] {
			t.Errorf("drivertest: the mount-spec table names %q, which is not a spec of this suite; update MountSpecs", m.Spec)
		}
	}
	t.Logf("drivertest: %d specs ran: %d passed, %d failed; %d skipped", res.Ran, res.Passed, res.Failed, res.Skipped)
	return res
}
