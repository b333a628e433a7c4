package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	bucketclientset "sigs.k8s.io/container-object-storage-interface/client/clientset/versioned"
)

// Object is what the listeners are handed: a typed COSI API object.
type Object interface {
	metav1.Object
	runtime.Object
}

// Listener is the reconcile logic for one kind of object, as upstream's listeners implement
// it: clients and an event recorder first, then Add, Update and Delete calls.
type Listener[T Object] interface {
	InitializeKubeClient(kubernetes.Interface)
	InitializeBucketClient(bucketclientset.Interface)
	InitializeEventRecorder(record.EventRecorder)
	Add(ctx context.Context, obj T) error
	Update(ctx context.Context, old, new T) error
	Delete(ctx context.Context, obj T) error
}

// Backoff bounds of the per-object retry, upstream's.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 30 * time.Second
)

type opKind int

const (
	opAdd opKind = iota
	opUpdate
	opDelete
)

func (k opKind) String() string {
	return [...]string{"add", "update", "delete"}[k]
}

// op is the work waiting for one object.
type op[T Object] struct {
	kind     opKind
	old, obj T
}

// controller feeds one listener from one informer through a queue of UIDs.
type controller[T Object] struct {
	name     string // resource, for logs
	informer cache.SharedIndexInformer
	listener Listener[T]
	queue    workqueue.TypedRateLimitingInterface[types.UID]

	mu      sync.Mutex
	pending map[types.UID]op[T] // the work waiting per object
	handed  map[types.UID]T     // the version last handed to Add or Update
}

func newController[T Object](name string, informer cache.SharedIndexInformer, l Listener[T]) (*controller[T], error) {
	c := &controller[T]{
		name: name, informer: informer, listener: l,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](retryMin, retryMax),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: name}),
		pending: map[types.UID]op[T]{},
		handed:  map[types.UID]T{},
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.seen(obj) },
		UpdateFunc: func(_, obj any) { c.seen(obj) },
		DeleteFunc: c.gone,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: event handler: %w", name, err)
	}
	return c, nil
}

// seen queues an Update from the version last handed on when the object has been handed on
// before (if its spec changed or its deletion began since: specOrDeletionChanged), else an Add, unless work for the object is already
// waiting: upstream's runner keeps that work, so an object changed before its first Add ran
// is handed to Add as first seen.
func (c *controller[T]) seen(o any) {
	obj, ok := o.(T)
	if !ok {
		klog.ErrorS(nil, "unexpected object in informer", "resource", c.name, "type", fmt.Sprintf("%T", o))
		return
	}
	uid := obj.GetUID()
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.handed[uid]; ok {
		if !specOrDeletionChanged(prev, obj) {
			return
		}
		c.store(uid, op[T]{kind: opUpdate, old: prev, obj: obj})
		return
	}
	if _, waiting := c.pending[uid]; waiting {
		c.queue.Add(uid)
		return
	}
	c.store(uid, op[T]{kind: opAdd, obj: obj})
}

// gone queues a Delete, which replaces whatever was still waiting for the object.
func (c *controller[T]) gone(o any) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	obj, ok := o.(T)
	if !ok {
		klog.ErrorS(nil, "unexpected deleted object in informer", "resource", c.name, "type", fmt.Sprintf("%T", o))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(obj.GetUID(), op[T]{kind: opDelete, obj: obj})
}

// store must be called with mu held.
func (c *controller[T]) store(uid types.UID, o op[T]) {
	c.pending[uid] = o
	c.queue.Add(uid)
}

// run starts workers and blocks until ctx ends; the informer must be running.
func (c *controller[T]) run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		klog.ErrorS(ctx.Err(), "cache never synced", "resource", c.name)
		return
	}
	klog.V(2).InfoS("handing objects to the listener", "resource", c.name, "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// next runs the waiting op of one object. The queue never gives one UID to two workers at a
// time, so calls for one object never overlap.
func (c *controller[T]) next(ctx context.Context) bool {
	uid, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(uid)
	c.mu.Lock()
	o, ok := c.pending[uid]
	c.mu.Unlock()
	if !ok {
		c.queue.Forget(uid)
		return true
	}

	var err error
	switch o.kind {
	case opAdd:
		err = c.listener.Add(ctx, o.obj)
	case opUpdate:
		err = c.listener.Update(ctx, o.old, o.obj)
	case opDelete:
		err = c.listener.Delete(ctx, o.obj)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	// What the listener was handed is the base of the next Update, whether it succeeded or not.
	if o.kind == opDelete {
		delete(c.handed, uid)
		delete(c.pending, uid)
	} else {
		c.handed[uid] = o.obj
	}
	switch {
	case err != nil && o.kind != opDelete:
		// Retried with backoff: the waiting op, which a newer version may have replaced.
		klog.ErrorS(err, "listener failed; retrying", "resource", c.name, "op", o.kind, "name", key(o.obj))
		c.queue.AddRateLimited(uid)
		return true
	case err != nil:
		klog.ErrorS(err, "listener failed on a deleted object; not retried", "resource", c.name, "name", key(o.obj))
	}
	// Done: whatever was queued for the object while the listener ran goes too, as in
	// upstream's runner. The listeners depend on it: v0.2.2's BucketClaim logic, handed the
	// echo of its own status write, would write BucketReady=false over the true the sidecar set
	// meanwhile, and the claim would never become ready again.
	delete(c.pending, uid)
	c.queue.Forget(uid)
	return true
}

// specOrDeletionChanged reports whether an Update from prev to obj is handed on: when the spec
// changed (the API server bumps the generation of an object with a status subresource for that
// alone) or the object's deletion began. Changes of status, finalizers, labels or annotations
// are not. Upstream's listeners act on nothing else, and they write status and finalizers
// themselves: handed the echo of those writes, v0.2.2's BucketClaim logic runs its create again
// and writes BucketReady=false over the true the sidecar set in between, after which no access
// is ever granted (the race of cozystack/cozystack#3032). Which of the two wins depends on
// whether the echo reaches the runner before the listener's call returns (then it is dropped,
// see next) or after. This is where the runner departs from upstream's, on purpose.
func specOrDeletionChanged(prev, obj metav1.Object) bool {
	return prev.GetGeneration() != obj.GetGeneration() ||
		(prev.GetDeletionTimestamp() == nil) != (obj.GetDeletionTimestamp() == nil)
}

func key(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
