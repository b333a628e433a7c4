package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/container-object-storage-interface/client/apis/objectstorage/v1alpha1"
	bucketclientset "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned"
	"sigs.k8s.io/container-object-storage-interface/client/informers/externalversions"
)

// Lease timings, upstream's.
const (
	leaseDuration = 150 * time.Second
	renewDeadline = 120 * time.Second
	retryPeriod   = 60 * time.Second
)

// resyncPeriod is none. Upstream's runner asks for a 30 s resync, but its resync re-delivers the
// version it last handed on, which it then drops as unchanged: resyncing hands nothing on. An
// informer's resync would re-deliver the newest version instead, handing on changes upstream's
// runner has dropped (see controller.next), so this runner does not resync.
const resyncPeriod = 0

// Config names a program for its lease and its events.
type Config struct {
	// Identity is the events' source component and the second half of the lease name
	// ("cosi-controller-manager" for the controller, "cosi" for the sidecar, as upstream).
	Identity string
	// LeaseName is the first half of the lease name ("leader-lock" for the controller, the
	// driver's name for the sidecar, as upstream).
	LeaseName string
	// Workers per kind of object; upstream runs 40.
	Workers int
}

// runnable is a controller of any object type.
type runnable interface {
	run(ctx context.Context, workers int)
}

// Runner runs listeners while it holds its lease.
type Runner struct {
	cfg          Config
	kube         kubernetes.Interface
	buckets      bucketclientset.Interface
	factory      externalversions.SharedInformerFactory
	broadcaster  record.EventBroadcaster
	recorder     record.EventRecorder
	controllers  []runnable
	leaseNS      string
	leaderID     string
	electionless bool // tests only: run without a lease
}

// New builds a runner on a REST configuration.
func New(cfg Config, rc *rest.Config) (*Runner, error) {
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	buckets, err := bucketclientset.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("objectstorage client: %w", err)
	}
	return newWithClients(cfg, kube, buckets)
}

func newWithClients(cfg Config, kube kubernetes.Interface, buckets bucketclientset.Interface) (*Runner, error) {
	if cfg.Identity == "" || cfg.LeaseName == "" {
		return nil, errors.New("runner: Identity and LeaseName are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 40
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader identity: %w", err)
	}
	b := record.NewBroadcaster()
	return &Runner{
		cfg: cfg, kube: kube, buckets: buckets,
		factory:     externalversions.NewSharedInformerFactory(buckets, resyncPeriod),
		broadcaster: b,
		recorder:    b.NewRecorder(scheme, corev1.EventSource{Component: cfg.Identity}),
		leaseNS:     namespace(),
		leaderID:    sanitize(host),
	}, nil
}

// Informers are the shared informers of the objectstorage.k8s.io types.
func (r *Runner) Informers() externalversions.SharedInformerFactory { return r.factory }

// Add registers a listener for the objects of one informer of Informers(); call it before Run.
// The listener gets the runner's clients and event recorder at once, as upstream's runner
// initialises its listeners before handing them anything.
func Add[T Object](r *Runner, resource string, informer cache.SharedIndexInformer, l Listener[T]) error {
	l.InitializeKubeClient(r.kube)
	l.InitializeBucketClient(r.buckets)
	l.InitializeEventRecorder(r.recorder)
	c, err := newController(resource, informer, l)
	if err != nil {
		return err
	}
	r.controllers = append(r.controllers, c)
	return nil
}

// Run waits for the lease, then runs every listener until ctx ends or the lease is lost.
func (r *Runner) Run(ctx context.Context) error {
	if len(r.controllers) == 0 {
		return errors.New("runner: no listener registered")
	}
	r.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.kube.CoreV1().Events("")})
	defer r.broadcaster.Shutdown()
	if r.electionless {
		r.work(ctx)
		return ctx.Err()
	}
	name := sanitize(r.cfg.LeaseName + "/" + r.cfg.Identity)
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, r.leaseNS, name,
		r.kube.CoreV1(), r.kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: r.leaderID, EventRecorder: r.recorder})
	if err != nil {
		return fmt.Errorf("lease %s/%s: %w", r.leaseNS, name, err)
	}
	klog.InfoS("waiting for the lease", "namespace", r.leaseNS, "name", name, "identity", r.leaderID)
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				klog.InfoS("holding the lease; starting", "name", name)
				r.work(ctx)
			},
			OnStoppedLeading: func() { klog.InfoS("not holding the lease", "name", name) },
		},
	})
	// RunOrDie returns when ctx ends or the lease could not be renewed; upstream's runner then
	// ends the program, and so does this one, so that the pod restarts and campaigns again.
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("lost the lease %s/%s", r.leaseNS, name)
}

// work starts the informers and the controllers and returns when ctx ends and they stopped.
func (r *Runner) work(ctx context.Context) {
	r.factory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, c := range r.controllers {
		wg.Go(func() { c.run(ctx, r.cfg.Workers) })
	}
	wg.Wait()
	r.factory.Shutdown()
}

// namespace is where the lease lives: $POD_NAMESPACE, else the service account's namespace,
// else "default", as upstream looks it up.
func namespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

var notNameChar = regexp.MustCompile(`[^a-zA-Z0-9-]`)

// sanitize makes a lease name or holder identity of a free string, as upstream does.
func sanitize(s string) string {
	s = strings.ToLower(notNameChar.ReplaceAllString(s, "-"))
	if s == "" || strings.HasSuffix(s, "-") {
		s += "x"
	}
	return s
}
