// Package streamcapture remembers the first message a gRPC server stream receives: for a
// server-streaming RPC that is the request, which interceptors need after the handler ran (to
// scrub the request's secrets from an error or a panic report).
package streamcapture

import (
	"sync/atomic"

	"google.golang.org/grpc"
)

// Stream wraps a server stream and keeps the first message received through it.
type Stream struct {
	grpc.ServerStream
	first atomic.Pointer[received]
}

type received struct{ m any }

// New wraps ss.
func New(ss grpc.ServerStream) *Stream { return &Stream{ServerStream: ss} }

// RecvMsg receives as the wrapped stream does and keeps the first message.
func (s *Stream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && s.first.Load() == nil {
		s.first.CompareAndSwap(nil, &received{m})
	}
	return err
}

// First is the first message received, or nil before any.
func (s *Stream) First() any {
	if r := s.first.Load(); r != nil {
		return r.m
	}
	return nil
}
