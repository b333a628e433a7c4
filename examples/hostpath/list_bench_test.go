package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/internal/pagetoken"
)

// bareLister answers ListVolumes from recorded responses, keyed by starting_token: a plain
// grpc-go server with nothing but the protocol, the floor any driver's listing stands on.
type bareLister struct {
	csi.UnimplementedControllerServer
	pages map[string]*csi.ListVolumesResponse
}

func (b *bareLister) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	return b.pages[req.GetStartingToken()], nil
}

// serveBare serves pages on a bare grpc-go server over a unix socket in dir.
func serveBare(tb testing.TB, dir string, pages map[string]*csi.ListVolumesResponse) (csi.ControllerClient, func()) {
	tb.Helper()
	lis, err := net.Listen("unix", filepath.Join(dir, "bare.sock"))
	if err != nil {
		tb.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterControllerServer(srv, &bareLister{pages: pages})
	go srv.Serve(lis) //nolint:errcheck // ends with Stop
	conn, err := grpc.NewClient("unix://"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	return csi.NewControllerClient(conn), func() { conn.Close(); srv.Stop() }
}

// recordPages lists every page once and returns the responses keyed by the starting_token that
// asked for them.
func recordPages(tb testing.TB, ctrl csi.ControllerClient, pageSize int32) map[string]*csi.ListVolumesResponse {
	tb.Helper()
	pages := map[string]*csi.ListVolumesResponse{}
	token := ""
	for {
		resp, err := ctrl.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: pageSize, StartingToken: token})
		if err != nil {
			tb.Fatal(err)
		}
		pages[token] = resp
		if token = resp.GetNextToken(); token == "" {
			return pages
		}
	}
}

// listAll follows every page of ListVolumes with max_entries=pageSize and checks that every
// volume of want is listed exactly once and nothing else is. It returns the number of pages and
// the last full page's response (for the marshalling measurement).
func listAll(tb testing.TB, ctrl csi.ControllerClient, pageSize int32, want []string) (int, *csi.ListVolumesResponse) {
	tb.Helper()
	ctx := context.Background()
	seen := make(map[string]int, len(want))
	token, pages := "", 0
	var sample *csi.ListVolumesResponse
	for {
		resp, err := ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: pageSize, StartingToken: token})
		if err != nil {
			tb.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if len(resp.GetEntries()) > int(pageSize) {
			tb.Fatalf("page %d has %d entries, more than max_entries=%d", pages, len(resp.GetEntries()), pageSize)
		}
		if len(resp.GetEntries()) == int(pageSize) {
			sample = resp
		}
		for _, e := range resp.GetEntries() {
			seen[e.GetVolume().GetVolumeId()]++
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
	}
	for _, id := range want {
		if seen[id] != 1 {
			tb.Fatalf("volume %s listed %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		tb.Fatalf("listed %d distinct volumes, want %d", len(seen), len(want))
	}
	return pages, sample
}

// createVolumes creates n directory volumes named prefix-i with the given number of clients and
// returns their IDs in call order.
func createVolumes(tb testing.TB, ctrl csi.ControllerClient, prefix string, n, clients int) []string {
	tb.Helper()
	caps := []*csi.VolumeCapability{mountCapability("")}
	ids := make([]string, n)
	phase(tb, n, clients, func(i int) error {
		resp, err := ctrl.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: fmt.Sprintf("%s-%06d", prefix, i), VolumeCapabilities: caps})
		if err == nil {
			ids[i] = resp.GetVolume().GetVolumeId()
		}
		return err
	})
	return ids
}

// BenchmarkListVolumes10k lists 10,000 directory volumes over the unix socket in pages of 100,
// following next_token to the end, and checks that every volume is listed exactly once
// (target: <= 50 ms for the whole listing). In the same loop, interleaved, a bare grpc-go server
// answers the same 100 recorded responses over its own unix socket: the cost of the protocol
// alone (encoding, the socket, decoding in the client), which no driver can go below.
//
// It also splits the cost of one page:
//
//   - backend: the driver's ListVolumesPage for 101 entries (the library asks for one more than
//     max_entries to know whether another page follows), called in-process on the same state;
//
//   - token: minting and checking one next_token (internal/pagetoken);
//
//   - marshal: encoding a 100-entry response on the server and decoding it in the client;
//
//   - rest: the socket, gRPC, the interceptor chain and the library's conversion, what is left
//     of the page's share of the total.
//
//     go test -run '^$' -bench 'BenchmarkListVolumes10k$' -benchtime 50x ./examples/hostpath/
func BenchmarkListVolumes10k(b *testing.B) {
	const n, pageSize = 10000, 100
	dir := b.TempDir()
	env := serveInProcessPlugin(b, dir)
	defer env.stop()
	ids := createVolumes(b, env.ctrl, "list", n, 8)
	bare, stopBare := serveBare(b, dir, recordPages(b, env.ctrl, pageSize))
	defer stopBare()
	pages, sample := listAll(b, env.ctrl, pageSize, ids) // warm up both
	listAll(b, bare, pageSize, ids)
	var total, floor time.Duration
	for b.Loop() {
		start := time.Now()
		pages, _ = listAll(b, env.ctrl, pageSize, ids)
		total += time.Since(start)
		start = time.Now()
		listAll(b, bare, pageSize, ids)
		floor += time.Since(start)
	}
	b.StopTimer()
	perList, floorList := total/time.Duration(b.N), floor/time.Duration(b.N)
	perPage := perList / time.Duration(pages)

	// The split of one page, each part measured alone over many repetitions.
	const reps = 2000
	ctx := context.Background()
	after := ids[0]
	t0 := time.Now()
	for range reps / 10 {
		if _, err := env.plugin.Controller.ListVolumesPage(ctx, &driver.ListVolumesRequest{After: after, Limit: pageSize + 1}); err != nil {
			b.Fatal(err)
		}
	}
	backend := time.Since(t0) / (reps / 10)
	codec := pagetoken.New(nil)
	t0 = time.Now()
	for range reps {
		tok, err := codec.Encode("ListVolumes", "", after)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := codec.Decode(tok, "ListVolumes", ""); err != nil {
			b.Fatal(err)
		}
	}
	token := time.Since(t0) / reps
	t0 = time.Now()
	for range reps / 10 {
		raw, err := proto.Marshal(sample)
		if err != nil {
			b.Fatal(err)
		}
		var back csi.ListVolumesResponse
		if err := proto.Unmarshal(raw, &back); err != nil {
			b.Fatal(err)
		}
	}
	marshal := time.Since(t0) / (reps / 10)

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(perList), "ms/list-10k")
	b.ReportMetric(ms(floorList), "bare-grpc-ms/list-10k")
	b.ReportMetric(float64(perList)/float64(floorList), "x-bare")
	b.ReportMetric(float64(pages), "pages")
	b.ReportMetric(float64(perPage.Microseconds()), "us/page")
	b.ReportMetric(float64(backend.Microseconds()), "backend-us/page")
	b.ReportMetric(float64(token.Nanoseconds())/1000, "token-us/page")
	b.ReportMetric(float64(marshal.Microseconds()), "marshal-us/page")
	b.ReportMetric(float64((perPage - backend - token - marshal).Microseconds()), "rest-us/page")
}
