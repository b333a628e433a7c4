package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identity answers Probe with resp or err.
type identity struct {
	csi.IdentityClient
	resp *csi.ProbeResponse
	err  error
}

func (i identity) Probe(context.Context, *csi.ProbeRequest, ...grpc.CallOption) (*csi.ProbeResponse, error) {
	return i.resp, i.err
}

func TestHealthz(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   identity
		want int
	}{
		{"ready", identity{resp: &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}}, http.StatusOK},
		{"ready field absent", identity{resp: &csi.ProbeResponse{}}, http.StatusOK},
		{"not ready", identity{resp: &csi.ProbeResponse{Ready: wrapperspb.Bool(false)}}, http.StatusInternalServerError},
		{"probe fails", identity{err: errors.New("connection refused")}, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			healthz(tc.id, time.Second).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d (%s)", rec.Code, tc.want, rec.Body)
			}
		})
	}
}
