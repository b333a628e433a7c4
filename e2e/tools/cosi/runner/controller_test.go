package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/container-object-storage-interface/client/apis/objectstorage/v1alpha1"
	bucketclientset "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned"
	bucketfake "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned/fake"
)

// calls records what a listener was handed, in order. It fails Add as often as told, and holds
// the call named in hold until release is closed.
type calls struct {
	mu       sync.Mutex
	log      []string
	failAdds int
	inFlight int
	overlap  bool
	hold     string
	held     chan struct{} // closed when the held call has started
	release  chan struct{}
	changed  chan struct{}
}

func newCalls(failAdds int, hold string) *calls {
	return &calls{failAdds: failAdds, hold: hold, held: make(chan struct{}), release: make(chan struct{}), changed: make(chan struct{}, 1)}
}

func (c *calls) InitializeKubeClient(kubernetes.Interface)        {}
func (c *calls) InitializeBucketClient(bucketclientset.Interface) {}
func (c *calls) InitializeEventRecorder(record.EventRecorder)     {}
func (c *calls) Add(_ context.Context, b *v1alpha1.BucketClaim) error {
	return c.note(fmt.Sprintf("add %s/%s", b.Name, b.Spec.BucketClassName), true)
}
func (c *calls) Update(_ context.Context, old, new *v1alpha1.BucketClaim) error {
	return c.note(fmt.Sprintf("update %s %s->%s", new.Name, old.Spec.BucketClassName, new.Spec.BucketClassName), false)
}
func (c *calls) Delete(_ context.Context, b *v1alpha1.BucketClaim) error {
	return c.note("delete "+b.Name, false)
}

func (c *calls) note(s string, isAdd bool) error {
	c.mu.Lock()
	c.inFlight++
	c.overlap = c.overlap || c.inFlight > 1
	fail := isAdd && c.failAdds > 0
	if fail {
		c.failAdds--
		s += " (failed)"
	}
	c.log = append(c.log, s)
	hold := s == c.hold
	c.mu.Unlock()
	if hold {
		close(c.held)
		<-c.release
	}
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
	if fail {
		return errors.New("injected failure")
	}
	return nil
}

// waitFor waits until the log equals want; the deadline bounds the retries' backoff.
func (c *calls) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		got := append([]string(nil), c.log...)
		c.mu.Unlock()
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if len(got) > len(want) {
			t.Fatalf("calls %q, want %q", got, want)
		}
		select {
		case <-c.changed:
		case <-time.After(50 * time.Millisecond): // a call may have ended between reads
		case <-deadline:
			t.Fatalf("calls %q, want %q", got, want)
		}
	}
}

// waitQueued polls the controller's queued work for uid, with a deadline, until cond holds.
func waitQueued(t *testing.T, c *controller[*v1alpha1.BucketClaim], uid types.UID, what string, cond func(o op[*v1alpha1.BucketClaim], ok bool) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		o, ok := c.pending[uid]
		c.mu.Unlock()
		if cond(o, ok) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestListenerSemantics drives one listener through fake clients, as upstream's runner would:
// a failed Add retried with the same version, an Update from the version last handed on, a
// change made while a call runs dropped when it succeeds, no call for an unchanged update, and
// a Delete; never two calls for one object at once. It departs from upstream's runner where
// doc.go says: an update that changes neither the spec nor the deletion is not handed on.
func TestListenerSemantics(t *testing.T) {
	// The generated fake clientset of the COSI client (made for client-go v0.32) cannot stream a
	// watch's initial list, which client-go v0.36 informers ask for by default; real API
	// servers can.
	t.Setenv("KUBE_FEATURE_WatchListClient", "false")
	kube := kubefake.NewClientset()
	buckets := bucketfake.NewSimpleClientset()
	// A fake clientset's watch misses what is created between its list and its watch: create
	// nothing before the informer watches.
	watching := make(chan struct{})
	var once sync.Once
	buckets.PrependWatchReactor("bucketclaims", func(clienttesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	r, err := newWithClients(Config{Identity: "test", LeaseName: "test", Workers: 4}, kube, buckets)
	if err != nil {
		t.Fatal(err)
	}
	r.electionless = true
	l := newCalls(2, "update a two->three")
	if err := Add(r, "bucketclaims", r.Informers().Objectstorage().V1alpha1().BucketClaims().Informer(), l); err != nil {
		t.Fatal(err)
	}
	ctrl := r.controllers[0].(*controller[*v1alpha1.BucketClaim])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	<-watching
	claims := buckets.ObjectstorageV1alpha1().BucketClaims("ns")
	bc := &v1alpha1.BucketClaim{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "uid-a"},
		Spec: v1alpha1.BucketClaimSpec{BucketClassName: "one"}}
	// Each change but one waits until the listener is done with the previous: a change made
	// while a call runs is dropped when the call succeeds (tested on its own below).
	idle := func() {
		t.Helper()
		waitQueued(t, ctrl, bc.UID, "the listener idle", func(_ op[*v1alpha1.BucketClaim], ok bool) bool { return !ok })
	}
	setClass := func(class string) {
		t.Helper()
		// The fake clientset keeps the generation it is given; an API server bumps it when
		// the spec changes.
		if bc.Spec.BucketClassName != class {
			bc.Generation++
		}
		bc.Spec.BucketClassName = class
		if _, err := claims.Update(ctx, bc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := claims.Create(ctx, bc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"add a/one (failed)", "add a/one (failed)", "add a/one"}
	l.waitFor(t, want...)
	idle()
	setClass("two")
	want = append(want, "update a one->two")
	l.waitFor(t, want...)
	idle()

	// "three" is held in the listener while the claim changes to "four"; when the call for
	// "three" succeeds, the change to "four" is dropped, and the next change is an Update from
	// "three", the version last handed on.
	setClass("three")
	<-l.held
	setClass("four")
	waitQueued(t, ctrl, bc.UID, "the change to four queued", func(o op[*v1alpha1.BucketClaim], ok bool) bool {
		return ok && o.obj.Spec.BucketClassName == "four"
	})
	close(l.release)
	idle()
	setClass("five")
	want = append(want, "update a two->three", "update a three->five")
	l.waitFor(t, want...)
	idle()

	// Updates that leave the spec and the deletion as they were hand nothing on: an equal
	// object, a status write and a finalizer added, as the listeners write them themselves. The
	// Delete after them shows the queue moved on.
	setClass("five")
	bc.Status = v1alpha1.BucketClaimStatus{BucketName: "bucket-a", BucketReady: true}
	if _, err := claims.UpdateStatus(ctx, bc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	bc.Finalizers = []string{"cosi.objectstorage.k8s.io/bucketclaim-protection"}
	if _, err := claims.Update(ctx, bc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := claims.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "delete a")
	l.waitFor(t, want...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.overlap {
		t.Error("two calls for one object overlapped")
	}
}

// TestSanitize checks lease names against upstream's rule.
func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"leader-lock/cosi-controller-manager": "leader-lock-cosi-controller-manager",
		"memorys3.csikit.dev/cosi":            "memorys3-csikit-dev-cosi",
		"Host_1.":                             "host-1-x",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
