// Package recovery turns a panic in a gRPC handler into an INTERNAL error and
// a redacted log entry, so that one bad request cannot take the plugin down.
//
// The client gets only
//
//	CreateVolume: internal error (panic); see the plugin log, request ID k3xq7m2pva-42
//
// and the plugin log gets one Error-level entry with the full method, the
// request ID, the panic value as text and the stack. The panic text is passed
// through a scrubber together with the request first, because a panic message
// is exactly where a secret ends up by accident (panic(fmt.Sprint(req))); the
// request itself is never logged.
//
// Put the interceptor outermost so that it also catches panics in the other
// interceptors. It attaches the request ID to the context before calling on
// (see [requestid.Ensure]), so the ID it reports is the one every inner
// interceptor and the handler see.
//
// Deferred functions in the handler and in inner interceptors run as the
// panic unwinds, before the interceptor recovers it: locks released with
// defer are released. A panic in a goroutine the handler started is beyond
// any interceptor's reach and still ends the process.
package recovery
