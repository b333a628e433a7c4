// Package metrics records every gRPC call a plugin serves as Prometheus metrics that existing CSI
// dashboards and alerts already understand.
//
// # Metric families
//
// CSI calls (csi.v1 services and the volume-group extension) are recorded under the names
// github.com/kubernetes-csi/csi-lib-utils v0.25.0 gives a plugin (its "csi_plugin" subsystem),
// with the same labels, label values and bucket boundaries, so a dashboard written for a
// csi-lib-utils driver works unchanged:
//
//	csi_plugin_operations_seconds{driver_name, method_name, grpc_status_code}   histogram
//
// method_name is the full gRPC method ("/csi.v1.Controller/CreateVolume") and grpc_status_code
// the code's name ("OK", "NotFound", "Aborted"), exactly as csi-lib-utils writes them. The
// buckets are 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300 and 600 seconds.
//
// COSI calls (any service in a package with a "cosi" component: cosi.v1alpha1.Provisioner,
// sigs.k8s.io.cosi.v1alpha2.Provisioner) have no upstream convention; they get the same shape
// under a name of our own, so that one dashboard template serves both:
//
//	cosi_plugin_operations_seconds{driver_name, method_name, grpc_status_code}  histogram
//
// Beside the histogram, each family has
//
//	<family>_operations_in_flight{driver_name, method_name}   gauge: calls running now
//	<family>_lock_conflicts_total{driver_name, kind}          counter: calls a held resource lock
//	                                                          turned away (ABORTED), by resource
//	                                                          kind ("volume", "snapshot name", ...)
//
// where <family> is csi_plugin or cosi_plugin. The process and Go runtime collectors
// (process_*, go_*) are added with [WithProcessAndGoCollectors].
//
// # Cost
//
// Nothing is allocated unless [New] is called. The interceptors resolve a method's series once,
// on its first call, and afterwards record a call with one lock-free map lookup and no allocation
// (see BenchmarkUnaryInterceptor).
//
// # Lock conflicts
//
// The locking middleware turns a held lock into an ABORTED status whose message is for people;
// reading the resource kind back out of that text would be fragile. Instead [Metrics.Locker]
// wraps the [idempotency.Locker] and counts each [idempotency.BusyError] it reports, with the
// kind the error carries. Code that detects a conflict elsewhere calls [Metrics.RecordAborted].
package metrics
