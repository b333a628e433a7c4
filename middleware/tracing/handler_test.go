package tracing_test

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/csikit/csikit/middleware/tracing"
)

// seeing is a controller that reports the span context each call's handler ran with.
type seeing struct {
	controller
	seen chan trace.SpanContext
}

func (s seeing) ControllerPublishVolume(ctx context.Context, r *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	s.seen <- trace.SpanContextFromContext(ctx)
	return s.controller.ControllerPublishVolume(ctx, r)
}

func (s seeing) DeleteVolume(ctx context.Context, r *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	s.seen <- trace.SpanContextFromContext(ctx)
	return s.controller.DeleteVolume(ctx, r)
}

// TestCallsWithoutARecordingSpan: a call WithFilter leaves out gets no span at all; a call the
// sampler leaves out keeps the CO's trace context (so its log lines carry the trace ID and its
// child spans and outgoing calls continue the trace) but records nothing.
func TestCallsWithoutARecordingSpan(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent  = "00-" + traceID + "-00f067aa0ba902b7-"
	)
	publish := func(ctx context.Context, c csi.ControllerClient) error {
		_, err := c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: "v", NodeId: "n"})
		return err
	}
	del := func(ctx context.Context, c csi.ControllerClient) error {
		_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "v"})
		return err
	}
	tests := []struct {
		name        string
		sampler     sdktrace.Sampler
		opts        []tracing.Option
		traceparent string
		call        func(context.Context, csi.ControllerClient) error
		wantValid   bool
		wantTraceID string
	}{
		{
			name: "filtered method: no span context",
			opts: []tracing.Option{tracing.WithFilter(func(m string) bool {
				return m != "/csi.v1.Controller/DeleteVolume"
			})},
			traceparent: parent + "01",
			call:        del,
		},
		{
			name:        "parent not sampled: the CO's trace, not recorded",
			sampler:     sdktrace.ParentBased(sdktrace.AlwaysSample()),
			traceparent: parent + "00",
			call:        publish,
			wantValid:   true,
			wantTraceID: traceID,
		},
		{
			name:      "ratio sampler that drops everything: a trace of its own, not recorded",
			sampler:   sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)),
			call:      publish,
			wantValid: true,
		},
	}
	forms(t, func(t *testing.T, form string) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				backend := seeing{seen: make(chan trace.SpanContext, 1)}
				h := newHarnessWith(t, form, backend, tt.sampler, tt.opts...)
				ctx := t.Context()
				if tt.traceparent != "" {
					ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", tt.traceparent)
				}
				if err := tt.call(ctx, h.client); err != nil {
					t.Fatal(err)
				}
				sc := <-backend.seen
				if sc.IsValid() != tt.wantValid {
					t.Fatalf("handler's span context valid = %v, want %v", sc.IsValid(), tt.wantValid)
				}
				if tt.wantTraceID != "" && sc.TraceID().String() != tt.wantTraceID {
					t.Errorf("trace ID = %s, want the CO's %s", sc.TraceID(), tt.wantTraceID)
				}
				if sc.IsSampled() {
					t.Error("span context is sampled, want not")
				}
				// A recording span would already be in the exporter or about to be; none may be.
				if n := len(h.exp.GetSpans()); n != 0 {
					t.Errorf("%d spans exported, want none", n)
				}
			})
		}
	})
}

// TestErrorStatusCarriesTheFinalMessage: a server fault's span status is Error with the message
// the CO got, not only the code's name the interceptor sets inside the chain.
func TestErrorStatusCarriesTheFinalMessage(t *testing.T) {
	forms(t, func(t *testing.T, form string) {
		h := newHarness(t, form, controller{})
		if _, err := h.client.DeleteVolume(t.Context(), &csi.DeleteVolumeRequest{VolumeId: "vol-internal"}); err == nil {
			t.Fatal("DeleteVolume succeeded, want INTERNAL")
		}
		s := serverSpan(t, h.waitSpans(t, 1))
		if s.Status.Code != otelcodes.Error || s.Status.Description != "disk on fire" {
			t.Errorf("status = %v %q, want Error %q", s.Status.Code, s.Status.Description, "disk on fire")
		}
	})
}

func TestTracingOffForNoopProvider(t *testing.T) {
	tests := []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"nil provider", nil},
		{"no-op provider, as otelenv.NewProvider returns when off", tracenoop.NewTracerProvider()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := tracing.ServerOption(tt.tp).(grpc.EmptyServerOption); !ok {
				t.Errorf("ServerOption installs a handler; want grpc.EmptyServerOption so tracing off costs nothing")
			}
			if tracing.ServerHandler(tt.tp) != nil {
				t.Error("ServerHandler is not nil; want nil so tracing off installs nothing")
			}
			if tracing.UnarySpanInterceptor(tt.tp) != nil || tracing.StreamSpanInterceptor(tt.tp) != nil {
				t.Error("a span interceptor is not nil; want nil so tracing off adds nothing to the chain")
			}
		})
	}
}
