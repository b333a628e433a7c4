package tracing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// testExporter records what a batch processor hands it. Every ExportSpans
// sends its span names on batches (when set); with hold set, it first sends
// on started and then waits for a value on hold (or for its context to end).
// It counts how many exports run at once.
type testExporter struct {
	batches chan []string
	started chan struct{}
	hold    chan struct{}
	err     error // what ExportSpans returns
	stopErr error // what Shutdown returns

	inFlight    atomic.Int32
	concurrent  atomic.Bool
	exported    atomic.Int64
	shutdowns   atomic.Int32
	afterShut   atomic.Bool // an export came after Shutdown
	exportCtxOK atomic.Bool // every export's context had a deadline
	exports     atomic.Int32
	longest     atomic.Int32 // the longest batch
}

func newTestExporter() *testExporter {
	e := &testExporter{batches: make(chan []string, 100)}
	e.exportCtxOK.Store(true)
	return e
}

func (e *testExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.inFlight.Add(1) > 1 {
		e.concurrent.Store(true)
	}
	defer e.inFlight.Add(-1)
	e.exports.Add(1)
	for n := int32(len(spans)); ; {
		if l := e.longest.Load(); n <= l || e.longest.CompareAndSwap(l, n) {
			break
		}
	}
	if e.shutdowns.Load() > 0 {
		e.afterShut.Store(true)
	}
	if _, ok := ctx.Deadline(); !ok {
		e.exportCtxOK.Store(false)
	}
	if e.hold != nil {
		e.started <- struct{}{}
		select {
		case <-e.hold:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	// Give another export, if the processor started one, the chance to
	// overlap this one.
	runtime.Gosched()
	e.exported.Add(int64(len(spans)))
	if e.batches != nil {
		names := make([]string, len(spans))
		for i, s := range spans {
			names[i] = s.Name()
		}
		e.batches <- names
	}
	return e.err
}

func (e *testExporter) Shutdown(context.Context) error {
	e.shutdowns.Add(1)
	return e.stopErr
}

// receive returns the next value of ch. The timeout only turns a hang into a
// failure; it does not order the test.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// testConfig is a processor configuration that exports on size or on
// demand only.
func testConfig(queue, batch int) batchConfig {
	return batchConfig{scheduleDelay: time.Hour, exportTimeout: time.Minute, maxQueue: queue, maxBatch: batch}
}

// startProcessor starts a processor with c whose reports go to the
// returned channel, behind an SDK provider; the processor is shut down when
// the test ends.
func startProcessor(t *testing.T, e sdktrace.SpanExporter, c batchConfig, opts ...sdktrace.TracerProviderOption) (*batchProcessor, trace.Tracer, chan error) {
	t.Helper()
	reports := make(chan error, 100)
	p := newBatchProcessor(e, c, func(err error) { reports <- err })
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(p)}, opts...)...)
	return p, tp.Tracer("test"), reports
}

// endSpans starts and ends n spans named prefix0, prefix1, ...
func endSpans(tr trace.Tracer, prefix string, n int) {
	for i := range n {
		endSpan(tr, prefix+strconv.Itoa(i))
	}
}

func endSpan(tr trace.Tracer, name string) {
	_, s := tr.Start(context.Background(), name)
	s.End()
}

func names(prefix string, from, to int) []string {
	var n []string
	for i := from; i < to; i++ {
		n = append(n, prefix+strconv.Itoa(i))
	}
	return n
}

// noReport fails if the processor reported anything.
func noReport(t *testing.T, reports chan error) {
	t.Helper()
	select {
	case err := <-reports:
		t.Errorf("unexpected report: %v", err)
	default:
	}
}

// TestBatchProcessorExportsFullBatches: a full batch wakes the export
// goroutine at once, which exports whole batches only and leaves the rest
// for the timer or a flush; batches keep the order spans ended in. (Fake
// clock: synctest.Wait tells when nothing more will happen.)
func TestBatchProcessorExportsFullBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExporter()
		e.started, e.hold = make(chan struct{}, 10), make(chan struct{})
		p, tr, reports := startProcessor(t, e, testConfig(100, 4))
		start := time.Now()

		endSpans(tr, "a", 3)
		synctest.Wait()
		if len(e.started) != 0 {
			t.Fatal("exported before a batch was full")
		}
		endSpan(tr, "a3") // a full batch: exported at once
		<-e.started
		// While the first export runs, six more: one full batch and two over.
		endSpans(tr, "b", 6)
		e.hold <- struct{}{}
		if got := <-e.batches; !slices.Equal(got, names("a", 0, 4)) {
			t.Errorf("batch 1 = %v", got)
		}
		<-e.started
		close(e.hold)
		if got := <-e.batches; !slices.Equal(got, names("b", 0, 4)) {
			t.Errorf("batch 2 = %v, want the full batch only", got)
		}
		synctest.Wait()
		if len(e.batches) != 0 {
			t.Fatalf("the spans short of a batch were exported too: %v", <-e.batches)
		}
		if time.Since(start) != 0 {
			t.Errorf("the batches waited %v for the timer", time.Since(start))
		}
		if err := p.ForceFlush(t.Context()); err != nil {
			t.Fatalf("ForceFlush: %v", err)
		}
		if got := <-e.batches; !slices.Equal(got, names("b", 4, 6)) {
			t.Errorf("batch 3 = %v, want the two left over", got)
		}
		noReport(t, reports)
		if err := p.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestBatchProcessorSplitsBatches: however many spans wait, the exporter
// gets at most a batch per call.
func TestBatchProcessorSplitsBatches(t *testing.T) {
	e := newTestExporter()
	e.started, e.hold = make(chan struct{}, 10), make(chan struct{})
	p, tr, _ := startProcessor(t, e, testConfig(100, 4))
	endSpans(tr, "a", 4)
	receive(t, e.started, "the first export")
	endSpans(tr, "b", 10) // two full batches and two over wait behind it
	close(e.hold)
	if err := p.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := e.exported.Load(); got != 14 {
		t.Errorf("exported %d spans, want 14", got)
	}
	if got := e.longest.Load(); got != 4 {
		t.Errorf("longest batch %d, want 4", got)
	}
}

// TestBatchProcessorExportsOnSchedule: spans short of a batch are exported
// the schedule delay after the previous export, and not before (fake clock,
// with the default delay of 5 s).
func TestBatchProcessorExportsOnSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTestExporter()
		c := batchConfigFromEnv(func(string) string { return "" }, func(err error) { t.Error(err) })
		p := newBatchProcessor(e, c, func(err error) { t.Error(err) })
		tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)).Tracer("test")
		start := time.Now()
		for round, n := range []int{3, 2} {
			endSpans(tr, "s", n)
			synctest.Wait()
			if len(e.batches) != 0 {
				t.Fatalf("round %d: exported before the schedule delay", round)
			}
			got := <-e.batches // the fake clock moves to the timer
			if len(got) != n {
				t.Errorf("round %d: batch of %d, want %d", round, len(got), n)
			}
			if d := time.Since(start); d != defaultScheduleDelay {
				t.Errorf("round %d: exported after %v, want %v", round, d, defaultScheduleDelay)
			}
			start = time.Now()
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		// synctest.Test fails if the export goroutine is still running.
	})
}

// TestBatchProcessorDropsWhenFull: a span ended while the queue is full is
// dropped at once, never waited for, and the count is reported once, with
// the next export.
func TestBatchProcessorDropsWhenFull(t *testing.T) {
	e := newTestExporter()
	e.started, e.hold = make(chan struct{}, 10), make(chan struct{})
	p, tr, reports := startProcessor(t, e, testConfig(4, 4))

	endSpans(tr, "a", 4)
	receive(t, e.started, "the first export") // holds a0..a3; the queue is empty
	endSpans(tr, "b", 4)                      // fills the queue
	endSpans(tr, "c", 3)                      // dropped: the test would hang here if OnEnd waited
	noReport(t, reports)
	close(e.hold)
	receive(t, e.batches, "batch 1")
	if got := receive(t, e.batches, "batch 2"); !slices.Equal(got, names("b", 0, 4)) {
		t.Errorf("batch 2 = %v", got)
	}
	err := receive(t, reports, "the drop report")
	if !errors.Is(err, ErrQueueFull) || !strings.Contains(err.Error(), ": 3 since the previous export") {
		t.Errorf("report = %v, want ErrQueueFull with a count of 3", err)
	}
	if err := p.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	noReport(t, reports) // reported once, not again
	if got := e.exported.Load(); got != 8 {
		t.Errorf("exported %d spans, want 8", got)
	}
}

// TestDroppedSpansReachOtelHandle: by default the drop count goes to
// OpenTelemetry's global error handler.
func TestDroppedSpansReachOtelHandle(t *testing.T) {
	got := make(chan error, 10)
	setOtelHandler(t, func(err error) { got <- err })
	e := newTestExporter()
	e.started, e.hold = make(chan struct{}, 10), make(chan struct{})
	p := newBatchProcessor(e, testConfig(1, 1), nil)
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)).Tracer("test")
	endSpans(tr, "a", 1)
	receive(t, e.started, "the first export")
	endSpans(tr, "b", 3) // one queued, two dropped
	close(e.hold)
	if err := receive(t, got, "the report"); !errors.Is(err, ErrQueueFull) {
		t.Errorf("otel.Handle got %v, want ErrQueueFull", err)
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// otelHandler forwards OpenTelemetry's global error handler to the handler
// of the test running, or logs as the default one does. The global handler
// can be set, not restored, so it is set once.
var (
	otelHandlerOnce sync.Once
	otelHandlerFunc atomic.Pointer[func(error)]
)

type forwardHandler struct{}

func (forwardHandler) Handle(err error) {
	if f := otelHandlerFunc.Load(); f != nil {
		(*f)(err)
	}
}

func setOtelHandler(t *testing.T, f func(error)) {
	otelHandlerOnce.Do(func() { otel.SetErrorHandler(forwardHandler{}) })
	otelHandlerFunc.Store(&f)
	t.Cleanup(func() { otelHandlerFunc.Store(nil) })
}

// recordOnly is a sampler that records the spans named "unsampled" without
// sampling them, and samples the others.
type recordOnly struct{}

func (recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == "unsampled" {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (recordOnly) Description() string { return "recordOnly" }

// TestBatchProcessorIgnoresUnsampled: a span that records but is not
// sampled reaches OnEnd and is not exported, and does not count as dropped.
func TestBatchProcessorIgnoresUnsampled(t *testing.T) {
	e := newTestExporter()
	p, tr, reports := startProcessor(t, e, testConfig(1, 1), sdktrace.WithSampler(recordOnly{}))
	for range 5 {
		_, s := tr.Start(context.Background(), "unsampled")
		if !s.IsRecording() || s.SpanContext().IsSampled() {
			t.Fatal("the sampler does not give a recording, unsampled span")
		}
		s.End()
	}
	endSpans(tr, "s", 1)
	if got := receive(t, e.batches, "the sampled span"); !slices.Equal(got, []string{"s0"}) {
		t.Errorf("exported %v, want only the sampled span", got)
	}
	if err := p.ForceFlush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := e.exported.Load(); n != 1 {
		t.Errorf("exported %d spans, want 1", n)
	}
	noReport(t, reports)
}

var errBoom = errors.New("boom")

// TestBatchProcessorForceFlush: ForceFlush exports every span ended before
// it before returning, returns the export's error, and returns ctx's error
// when ctx ends first.
func TestBatchProcessorForceFlush(t *testing.T) {
	tests := []struct {
		name         string
		exportErr    error
		cancelBefore bool // ctx is cancelled before the call
		cancelDuring bool // ctx is cancelled while the export is held
		shutdown     bool // the processor is shut down before the call
		wantErr      error
		wantExported int64 // by the time ForceFlush returns
	}{
		{name: "exports everything queued", wantExported: 5},
		{name: "returns the export error", exportErr: errBoom, wantErr: errBoom, wantExported: 5},
		{name: "ctx already done", cancelBefore: true, wantErr: context.Canceled},
		{name: "ctx ends during the export", cancelDuring: true, wantErr: context.Canceled},
		{name: "after Shutdown", shutdown: true, wantExported: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExporter()
			e.err = tt.exportErr
			if tt.cancelDuring {
				e.started, e.hold = make(chan struct{}, 1), make(chan struct{})
			}
			p, tr, _ := startProcessor(t, e, testConfig(100, 50))
			endSpans(tr, "s", 5)
			if tt.shutdown {
				if err := p.Shutdown(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancelBefore {
				cancel()
			}
			if tt.cancelDuring {
				go func() {
					<-e.started
					cancel()
				}()
			}
			err := p.ForceFlush(ctx)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("ForceFlush = %v, want %v", err, tt.wantErr)
			}
			if got := e.exported.Load(); got != tt.wantExported {
				t.Errorf("%d spans exported when ForceFlush returned, want %d", got, tt.wantExported)
			}
			if !e.exportCtxOK.Load() {
				t.Error("an export ran without the export timeout")
			}
		})
	}
}

// TestBatchProcessorShutdown: Shutdown exports what is queued, then shuts
// the exporter down once; it returns what those gave; later calls return
// the same; spans ended after it are dropped without a report; and its
// goroutine is gone when it returns.
func TestBatchProcessorShutdown(t *testing.T) {
	errStop := errors.New("stop failed")
	tests := []struct {
		name      string
		exportErr error
		stopErr   error
	}{
		{name: "clean"},
		{name: "export error", exportErr: errBoom},
		{name: "exporter shutdown error", stopErr: errStop},
		{name: "both", exportErr: errBoom, stopErr: errStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExporter()
			e.err, e.stopErr = tt.exportErr, tt.stopErr
			p, tr, reports := startProcessor(t, e, testConfig(100, 50))
			endSpans(tr, "s", 7)
			err := p.Shutdown(t.Context())
			for _, want := range []error{tt.exportErr, tt.stopErr} {
				if want != nil && !errors.Is(err, want) {
					t.Errorf("Shutdown = %v, want it to include %v", err, want)
				}
			}
			if tt.exportErr == nil && tt.stopErr == nil && err != nil {
				t.Errorf("Shutdown = %v", err)
			}
			if got := e.exported.Load(); got != 7 {
				t.Errorf("exported %d spans before Shutdown returned, want 7", got)
			}
			select {
			case <-p.done:
			default:
				t.Error("the export goroutine is still running after Shutdown returned")
			}
			// Again, directly and through the provider: same result, no
			// second exporter shutdown.
			if again := p.Shutdown(t.Context()); !sameErr(again, err) {
				t.Errorf("second Shutdown = %v, want %v", again, err)
			}
			if n := e.shutdowns.Load(); n != 1 {
				t.Errorf("exporter shut down %d times, want 1", n)
			}
			// After Shutdown: dropped, not queued, not reported.
			p.OnEnd(sampledStub("late"))
			p.mu.Lock()
			queued := len(p.queue)
			p.mu.Unlock()
			if queued != 0 {
				t.Errorf("%d spans queued after Shutdown", queued)
			}
			if err := p.ForceFlush(t.Context()); err != nil {
				t.Errorf("ForceFlush after Shutdown = %v", err)
			}
			if e.afterShut.Load() || e.exported.Load() != 7 {
				t.Error("a span ended after Shutdown was exported")
			}
			noReport(t, reports)
		})
	}
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}

// sampledStub is an ended, sampled span that no provider knows.
func sampledStub(name string) sdktrace.ReadOnlySpan {
	return tracetest.SpanStub{
		Name: name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID{1},
			SpanID:     trace.SpanID{1},
			TraceFlags: trace.FlagsSampled,
		}),
	}.Snapshot()
}

// TestBatchProcessorShutdownCtxEnds: when ctx ends before the queued spans
// are exported, Shutdown returns ctx's error; the goroutine then finishes
// with the ended ctx (it does not linger on the export), and a later
// Shutdown returns what the first one would have.
func TestBatchProcessorShutdownCtxEnds(t *testing.T) {
	e := newTestExporter()
	e.started, e.hold = make(chan struct{}, 1), make(chan struct{}) // never released
	p, tr, _ := startProcessor(t, e, testConfig(100, 50))
	endSpans(tr, "s", 3)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-e.started
		cancel()
	}()
	if err := p.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	err := p.Shutdown(t.Context())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("second Shutdown = %v, want the canceled export's error", err)
	}
	if n := e.shutdowns.Load(); n != 1 {
		t.Errorf("exporter shut down %d times, want 1", n)
	}
}

// TestBatchProcessorNeverExportsConcurrently: many goroutines ending spans
// and flushing at once; the exporter is called by one goroutine at a time,
// every span is exported once, none dropped (the queue holds them all).
func TestBatchProcessorNeverExportsConcurrently(t *testing.T) {
	const workers, perWorker = 8, 300
	e := newTestExporter()
	e.batches = nil
	c := testConfig(workers*perWorker, 3)
	c.scheduleDelay = time.Millisecond
	p, tr, reports := startProcessor(t, e, c)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { endSpans(tr, fmt.Sprintf("w%d-", w), perWorker) })
	}
	for range 2 {
		wg.Go(func() {
			for range 20 {
				if err := p.ForceFlush(t.Context()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if e.concurrent.Load() {
		t.Error("ExportSpans was called while another call ran")
	}
	if got := e.exported.Load(); got != workers*perWorker {
		t.Errorf("exported %d spans, want %d", got, workers*perWorker)
	}
	noReport(t, reports)
}

// TestBatchProcessorLeavesNoGoroutine: processors idle, busy, and shut down
// in the middle of an export leave no goroutine behind once Shutdown has
// returned.
func TestBatchProcessorLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		idle := newBatchProcessor(newTestExporter(), testConfig(10, 5), func(error) {})
		busy := newBatchProcessor(newTestExporter(), testConfig(10, 5), func(error) {})
		tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(busy)).Tracer("test")
		endSpans(tr, "s", 12)
		for _, p := range []*batchProcessor{idle, busy} {
			if err := p.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A goroutine that closed done may still be returning: yield until the
	// count is back, within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Shutdown, %d before", runtime.NumGoroutine(), before)
		}
		runtime.Gosched()
	}
}

// TestNewBatchProcessorNilExporter: a nil exporter gives a processor that
// does nothing, as the SDK's does.
func TestNewBatchProcessorNilExporter(t *testing.T) {
	p := NewBatchProcessor(nil)
	p.OnEnd(sampledStub("s"))
	if err := p.ForceFlush(t.Context()); err != nil {
		t.Error(err)
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Error(err)
	}
}

// TestNewBatchProcessorConfig: NewBatchProcessor reads the OTEL_BSP_*
// variables and options win over them.
func TestNewBatchProcessorConfig(t *testing.T) {
	t.Setenv(EnvBSPScheduleDelay, "250")
	t.Setenv(EnvBSPExportTimeout, "1000")
	t.Setenv(EnvBSPMaxQueueSize, "64")
	t.Setenv(EnvBSPMaxExportBatchSize, "16")
	tests := []struct {
		name string
		opts []BatchOption
		want batchConfig
	}{
		{name: "environment", want: batchConfig{250 * time.Millisecond, time.Second, 64, 16}},
		{name: "options win", opts: []BatchOption{
			WithScheduleDelay(time.Second), WithExportTimeout(time.Minute),
			WithMaxQueueSize(8), WithMaxExportBatchSize(4)},
			want: batchConfig{time.Second, time.Minute, 8, 4}},
		{name: "options <= 0 are ignored", opts: []BatchOption{
			WithScheduleDelay(0), WithExportTimeout(-1), WithMaxQueueSize(0), WithMaxExportBatchSize(-3)},
			want: batchConfig{250 * time.Millisecond, time.Second, 64, 16}},
		{name: "a batch larger than the queue is the queue", opts: []BatchOption{WithMaxExportBatchSize(100)},
			want: batchConfig{250 * time.Millisecond, time.Second, 64, 64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewBatchProcessor(newTestExporter(), tt.opts...)
			defer func() { _ = p.Shutdown(context.Background()) }()
			if got := p.(*batchProcessor).cfg; got != tt.want {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestBatchConfigFromEnv: the OTEL_BSP_* variables as the SDK reads them,
// except that a value <= 0 is unusable too; every unusable value is
// reported.
func TestBatchConfigFromEnv(t *testing.T) {
	def := batchConfig{defaultScheduleDelay, defaultExportTimeout, defaultMaxQueueSize, defaultMaxExportBatchSize}
	with := func(f func(*batchConfig)) batchConfig { c := def; f(&c); return c }
	tests := []struct {
		name    string
		env     map[string]string
		want    batchConfig
		reports int
	}{
		{name: "unset: defaults", want: def},
		{name: "empty and blank: defaults, silently", env: map[string]string{
			EnvBSPScheduleDelay: "", EnvBSPMaxQueueSize: "  "}, want: def},
		{name: "all set", env: map[string]string{
			EnvBSPScheduleDelay: "100", EnvBSPExportTimeout: "2000",
			EnvBSPMaxQueueSize: "4096", EnvBSPMaxExportBatchSize: "1024"},
			want: batchConfig{100 * time.Millisecond, 2 * time.Second, 4096, 1024}},
		{name: "spaces around a number", env: map[string]string{EnvBSPScheduleDelay: " 300 "},
			want: with(func(c *batchConfig) { c.scheduleDelay = 300 * time.Millisecond })},
		{name: "not a number", env: map[string]string{
			EnvBSPScheduleDelay: "5s", EnvBSPExportTimeout: "abc", EnvBSPMaxQueueSize: "1e3",
			EnvBSPMaxExportBatchSize: "12.5"}, want: def, reports: 4},
		{name: "zero and negative", env: map[string]string{
			EnvBSPScheduleDelay: "0", EnvBSPExportTimeout: "-1", EnvBSPMaxQueueSize: "0",
			EnvBSPMaxExportBatchSize: "-512"}, want: def, reports: 4},
		{name: "overflowing int", env: map[string]string{EnvBSPMaxQueueSize: "99999999999999999999"},
			want: def, reports: 1},
		{name: "milliseconds past time.Duration", env: map[string]string{EnvBSPExportTimeout: strconv.Itoa(math.MaxInt64 / 1000)},
			want: with(func(c *batchConfig) { c.exportTimeout = math.MaxInt64 })},
		{name: "batch larger than the queue: the SDK's min(512, queue)", env: map[string]string{
			EnvBSPMaxQueueSize: "100", EnvBSPMaxExportBatchSize: "200"},
			want: with(func(c *batchConfig) { c.maxQueue, c.maxBatch = 100, 100 })},
		{name: "batch larger than a queue over 512: 512", env: map[string]string{
			EnvBSPMaxQueueSize: "800", EnvBSPMaxExportBatchSize: "1000"},
			want: with(func(c *batchConfig) { c.maxQueue, c.maxBatch = 800, 512 })},
		{name: "default batch larger than a small queue", env: map[string]string{EnvBSPMaxQueueSize: "10"},
			want: with(func(c *batchConfig) { c.maxQueue, c.maxBatch = 10, 10 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reports []error
			got := batchConfigFromEnv(func(k string) string { return tt.env[k] },
				func(err error) { reports = append(reports, err) })
			if got != tt.want {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
			if len(reports) != tt.reports {
				t.Errorf("%d reports %v, want %d", len(reports), reports, tt.reports)
			}
			for _, err := range reports {
				if !strings.Contains(err.Error(), "OTEL_BSP_") {
					t.Errorf("report %q does not name the variable", err)
				}
			}
		})
	}
}

// FuzzParseEnv: whatever the value, the result is positive, it is the value
// when the value is a positive integer, and the default (with an error
// unless the value is blank) otherwise.
func FuzzParseEnv(f *testing.F) {
	for _, s := range []string{"", " ", "0", "1", "-1", "512", " 2048 ", "+7", "0x10", "1e3", "5s",
		"9223372036854775807", "9223372036854775808", "9223372036854", "١٢", "\t42\n", "12abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		const def = 17
		n, err := parseEnvInt("K", v, def)
		want, perr := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case strings.TrimSpace(v) == "":
			if n != def || err != nil {
				t.Fatalf("blank %q: %d, %v", v, n, err)
			}
		case perr != nil || want <= 0:
			if n != def || err == nil {
				t.Fatalf("unusable %q: %d, %v", v, n, err)
			}
		default:
			if n != want || err != nil {
				t.Fatalf("%q: %d, %v; want %d", v, n, err, want)
			}
		}
		d, derr := parseEnvMillis("K", v, def*time.Millisecond)
		if d <= 0 || (derr == nil) != (err == nil) {
			t.Fatalf("millis %q: %v, %v", v, d, derr)
		}
		if err == nil && n <= math.MaxInt64/int(time.Millisecond) && d != time.Duration(n)*time.Millisecond {
			t.Fatalf("millis %q: %v, want %d ms", v, d, n)
		}
	})
}
