// Package runner hands Kubernetes objects to the reconcile logic of the COSI controller and the
// COSI provisioner sidecar, sigs.k8s.io/container-object-storage-interface v0.2.2.
//
// The reconcile logic is upstream's, imported unchanged: controller/pkg/bucketclaim,
// sidecar/pkg/bucket and sidecar/pkg/bucketaccess. The runner that feeds it is ours. Upstream's
// mains import their runner from sigs.k8s.io/container-object-storage-interface/internal, a
// module that was never published (the Go module proxy answers 404 for it), so the released
// programs cannot be built from the module proxy. This package plays the part of that runner,
// written to hand the listeners what upstream's runner at v0.2.2 hands them:
//
//   - every object is identified by its UID and handed to the listener's Add the first time it
//     is seen, to Update(old, new) when it changes afterwards (old being the version last handed
//     to the listener), and to Delete once when it is gone. An update is handed on only when it
//     changes the spec (the generation) or begins the deletion: here this runner departs from
//     upstream's on purpose, so that the listeners' own status and finalizer writes do not come
//     back to them (see specOrDeletionChanged);
//   - while work for an object waits or runs, changes of it replace a waiting Update, but not a
//     waiting Add (the Add gets the version first seen); when the work succeeds, what was queued
//     for the object meanwhile is dropped. Upstream's listeners depend on this (see
//     controller.next);
//   - a failed Add or Update is retried with a per-object exponential backoff from 100 ms to
//     30 s (restarting from 100 ms after a success, where upstream's keeps counting);
//   - a Delete is handed once and not retried: the object is gone;
//   - calls for one object never overlap; 40 workers per kind of object;
//   - nothing is handed on by resyncs (upstream's resync re-delivers what it handed last and
//     drops it as unchanged; this runner does not resync);
//   - the work runs only while the process holds a coordination.k8s.io Lease in its namespace
//     ($POD_NAMESPACE, else the service account's namespace, else "default"), named as upstream
//     names it, with upstream's lease timings, and the program ends when it loses the lease;
//   - events the listeners record go to the namespace of the object they are about.
package runner
