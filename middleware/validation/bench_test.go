package validation

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

func benchRequest(b *testing.B, m proto.Message) {
	b.ReportAllocs()
	if err := Request(m); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := Request(m); err != nil {
			b.Fatal(err)
		}
	}
}

// A fully populated CreateVolumeRequest: two capabilities, parameters, secrets, a content
// source, a topology requirement with requisite and preferred, mutable parameters.
func BenchmarkRequestCreateVolume(b *testing.B) { benchRequest(b, validCreateVolume()) }

// A ControllerPublishVolumeRequest with a mount capability, secrets and volume context.
func BenchmarkRequestControllerPublish(b *testing.B) { benchRequest(b, validControllerPublish()) }

// An invalid request, to show the cost of building the error.
func BenchmarkRequestInvalid(b *testing.B) {
	m := validCreateVolume()
	m.VolumeCapabilities[1].AccessMode.Mode = 0
	b.ReportAllocs()
	for b.Loop() {
		if Request(m) == nil {
			b.Fatal("want an error")
		}
	}
}

func BenchmarkResponseCreateVolume(b *testing.B) {
	m := validResponses()[3]
	b.ReportAllocs()
	for b.Loop() {
		if err := Response(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponseSizesCreateVolume is what every response costs with response checks off.
func BenchmarkResponseSizesCreateVolume(b *testing.B) {
	m := validResponses()[3]
	b.ReportAllocs()
	for b.Loop() {
		if err := ResponseSizes(m); err != nil {
			b.Fatal(err)
		}
	}
}

// Allocation counts are not timings: they do not depend on the machine, so they are asserted.
func TestValidRequestsDoNotAllocate(t *testing.T) {
	for _, m := range []proto.Message{validControllerPublish(), validCreateVolume()} {
		if n := testing.AllocsPerRun(100, func() { _ = Request(m) }); n != 0 {
			t.Errorf("%T: %v allocations per call, want 0", m, n)
		}
	}
}

// The size check runs on every response, so a valid one must cost no allocation either.
func TestResponseSizesOfValidResponsesDoNotAllocate(t *testing.T) {
	for _, m := range validResponses() {
		if n := testing.AllocsPerRun(100, func() { _ = ResponseSizes(m) }); n != 0 {
			t.Errorf("%T: %v allocations per call, want 0", m, n)
		}
	}
}

// A request built to be slow: 16 requisite and 16 preferred topologies of 800 keys each (just under 4 KiB),
// the preferred ones with upper-case keys and matching only the last requisite topology.
func BenchmarkRequestTopologyAdversarial(b *testing.B) {
	m := adversarialTopologyRequest(16)
	if err := Request(m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Request(m)
	}
}

// BenchmarkNewRules is what building a Rules value costs: csi.v1 alone here, once per
// plugin.New, never per call.
func BenchmarkNewRules(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewRules(Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
