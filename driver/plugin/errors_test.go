package plugin

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/csikit/csikit/driver"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestMapErrorSentinelsDecideFirst(t *testing.T) {
	upstreamNotFound := status.Error(codes.NotFound, "disk not found upstream")
	upstreamExists := status.Error(codes.AlreadyExists, "upstream name taken")
	withDetails, _ := status.New(codes.ResourceExhausted, "quota").WithDetails(&errdetails.QuotaFailure{})
	tests := []struct {
		name string
		rpc  rpc
		err  error
		want codes.Code
	}{
		{"sentinel beats a wrapped status", rpcDeleteVolume, fmt.Errorf("%w (%w)", driver.ErrNotFound, upstreamNotFound), codes.OK},
		{"sentinel beats a wrapped status, other direction", rpcCreateVolume, fmt.Errorf("%w: %w", upstreamNotFound, driver.ErrOutOfRange), codes.OutOfRange},
		{"top-level status keeps its code", rpcCreateVolume, upstreamExists, codes.AlreadyExists},
		{"top-level NOT_FOUND on a delete is success", rpcDeleteSnapshot, upstreamNotFound, codes.OK},
		{"top-level NOT_FOUND on ControllerUnpublish is kept", rpcControllerUnpublish, upstreamNotFound, codes.NotFound},
		{"wrapped NOT_FOUND is not this RPC's NOT_FOUND", rpcCreateVolume, fmt.Errorf("create disk: %w", upstreamNotFound), codes.Internal},
		{"wrapped ALREADY_EXISTS is not this RPC's", rpcControllerPublish, fmt.Errorf("attach: %w", upstreamExists), codes.Internal},
		{"wrapped UNAVAILABLE survives", rpcCreateVolume, fmt.Errorf("create disk: %w", status.Error(codes.Unavailable, "try later")), codes.Unavailable},
		{"wrapped UNAUTHENTICATED survives", rpcNodeStage, fmt.Errorf("login: %w", status.Error(codes.Unauthenticated, "bad token")), codes.Unauthenticated},
		{"a deadline of the backend's own is not the caller's", rpcCreateVolume, fmt.Errorf("waiting: %w", context.DeadlineExceeded), codes.Unavailable},
		{"plain error", rpcCreateVolume, errors.New("boom"), codes.Internal},
		{"details are dropped", rpcCreateVolume, withDetails.Err(), codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mapError(context.Background(), tt.rpc, tt.err)
			if status.Code(got) != tt.want {
				t.Fatalf("mapError(%s, %v) = %v, want %v", tt.rpc, tt.err, got, tt.want)
			}
			if got != nil && (status.Convert(got).Message() == "" || len(status.Convert(got).Details()) != 0) {
				t.Fatalf("status must have a message and no details: %v", status.Convert(got).Proto())
			}
		})
	}
}
