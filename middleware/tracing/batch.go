package tracing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Environment variables NewBatchProcessor reads, as the OpenTelemetry
// specification names them and with its defaults. A value that is not a
// positive integer (after trimming spaces) is reported through otel.Handle
// and the default is used.
const (
	// EnvBSPScheduleDelay is the longest a span waits before it is
	// exported, in milliseconds (default 5000).
	EnvBSPScheduleDelay = "OTEL_BSP_SCHEDULE_DELAY"
	// EnvBSPExportTimeout bounds one export, in milliseconds (default
	// 30000).
	EnvBSPExportTimeout = "OTEL_BSP_EXPORT_TIMEOUT"
	// EnvBSPMaxQueueSize is how many ended spans may wait for export
	// (default 2048); spans ended while it is full are dropped and counted.
	EnvBSPMaxQueueSize = "OTEL_BSP_MAX_QUEUE_SIZE"
	// EnvBSPMaxExportBatchSize is the most spans handed to the exporter at
	// once (default 512). A value larger than the queue is replaced by the
	// smaller of 512 and the queue size, as the SDK does.
	EnvBSPMaxExportBatchSize = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
)

// Defaults of the batch processor, the specification's (and the SDK's
// sdktrace.DefaultScheduleDelay and its siblings).
const (
	defaultScheduleDelay      = 5000 * time.Millisecond
	defaultExportTimeout      = 30000 * time.Millisecond
	defaultMaxQueueSize       = 2048
	defaultMaxExportBatchSize = 512
)

// ErrQueueFull is wrapped by the error a batch processor hands otel.Handle
// when spans were dropped because its queue was full; the message gives
// how many since the previous report. It is reported once per export at
// most, never per span.
var ErrQueueFull = errors.New("tracing: span queue full, spans dropped")

// errExportTimeout is the cause of an export's context when the export
// timeout ends it.
var errExportTimeout = errors.New("tracing: span export timed out")

// BatchOption configures NewBatchProcessor. An option wins over the
// environment variable of the same setting.
type BatchOption func(*batchConfig)

// WithScheduleDelay sets the longest a span waits in the queue before it is
// exported (OTEL_BSP_SCHEDULE_DELAY). A value <= 0 is ignored.
func WithScheduleDelay(d time.Duration) BatchOption {
	return func(c *batchConfig) {
		if d > 0 {
			c.scheduleDelay = d
		}
	}
}

// WithExportTimeout bounds each call of the exporter's ExportSpans
// (OTEL_BSP_EXPORT_TIMEOUT). A value <= 0 is ignored.
func WithExportTimeout(d time.Duration) BatchOption {
	return func(c *batchConfig) {
		if d > 0 {
			c.exportTimeout = d
		}
	}
}

// WithMaxQueueSize sets how many ended spans may wait for export
// (OTEL_BSP_MAX_QUEUE_SIZE). A value <= 0 is ignored.
func WithMaxQueueSize(n int) BatchOption {
	return func(c *batchConfig) {
		if n > 0 {
			c.maxQueue = n
		}
	}
}

// WithMaxExportBatchSize sets the most spans handed to the exporter at once
// (OTEL_BSP_MAX_EXPORT_BATCH_SIZE); it is capped at the queue size. A value
// <= 0 is ignored.
func WithMaxExportBatchSize(n int) BatchOption {
	return func(c *batchConfig) {
		if n > 0 {
			c.maxBatch = n
		}
	}
}

// batchConfig is a batch processor's settings.
type batchConfig struct {
	scheduleDelay time.Duration
	exportTimeout time.Duration
	maxQueue      int
	maxBatch      int
}

// batchConfigFromEnv reads the OTEL_BSP_* variables through getenv,
// reporting each unusable value to report.
func batchConfigFromEnv(getenv func(string) string, report func(error)) batchConfig {
	num := func(key string, def int) int {
		n, err := parseEnvInt(key, getenv(key), def)
		if err != nil {
			report(err)
		}
		return n
	}
	ms := func(key string, def time.Duration) time.Duration {
		d, err := parseEnvMillis(key, getenv(key), def)
		if err != nil {
			report(err)
		}
		return d
	}
	c := batchConfig{
		scheduleDelay: ms(EnvBSPScheduleDelay, defaultScheduleDelay),
		exportTimeout: ms(EnvBSPExportTimeout, defaultExportTimeout),
		maxQueue:      num(EnvBSPMaxQueueSize, defaultMaxQueueSize),
		maxBatch:      num(EnvBSPMaxExportBatchSize, defaultMaxExportBatchSize),
	}
	// The SDK's rule (sdktrace.NewBatchSpanProcessor) for a batch larger
	// than the queue.
	if c.maxBatch > c.maxQueue {
		c.maxBatch = min(defaultMaxExportBatchSize, c.maxQueue)
	}
	return c
}

// parseEnvInt is the positive integer v, the value of environment variable
// key, or def: when v is empty or blank (no error), or when it is not a
// positive integer (an error that says so).
func parseEnvInt(key, v string, def int) (int, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return def, fmt.Errorf("tracing: %s=%q is not a positive integer; using %d", key, v, def)
	}
	return n, nil
}

// parseEnvMillis is parseEnvInt for a number of milliseconds; a value too
// large for a time.Duration is the largest one.
func parseEnvMillis(key, v string, def time.Duration) (time.Duration, error) {
	n, err := parseEnvInt(key, v, int(def/time.Millisecond))
	if err != nil {
		return def, err
	}
	if int64(n) > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64, nil
	}
	return time.Duration(n) * time.Millisecond, nil
}

// NewBatchProcessor returns a span processor that exports sampled spans to
// e in batches, from one goroutine of its own. It is what NewProviderFromEnv
// gives every exporter; use it with sdktrace.WithSpanProcessor in place of
// sdktrace.WithBatcher.
//
// It follows the specification's batching processor, as the SDK's does:
// spans wait in a queue of OTEL_BSP_MAX_QUEUE_SIZE and are exported when
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE of them are waiting or
// OTEL_BSP_SCHEDULE_DELAY after the previous export, whichever comes first,
// at most a batch per ExportSpans call, each call bounded by
// OTEL_BSP_EXPORT_TIMEOUT; the exporter is never called concurrently. A
// span ended while the queue is full is dropped, never waited for: the
// count is handed to otel.Handle (wrapping ErrQueueFull) with the next
// export. Failed exports are handed to otel.Handle too, except those of
// ForceFlush and Shutdown, which return them. opts win over the
// environment.
//
// The difference from the SDK's processor is on the caller's side: the
// SDK's hands every span to its goroutine over a channel, which wakes that
// goroutine once per span, paid by the call that ends the span (about 1 us
// per sampled call measured on a two-core machine); this one appends the
// span to a slice under a mutex and wakes its goroutine only when a full
// batch is waiting, so ending a span costs an append. The queue is two
// slices used in turn, so a span ended adds no allocation; while one batch
// is being exported, up to a full queue more may wait (the SDK's processor
// likewise holds a batch besides its queue).
//
// A nil e gives a processor that does nothing, as the SDK's does.
func NewBatchProcessor(e sdktrace.SpanExporter, opts ...BatchOption) sdktrace.SpanProcessor {
	if e == nil {
		return nopProcessor{}
	}
	c := batchConfigFromEnv(os.Getenv, otel.Handle)
	for _, o := range opts {
		o(&c)
	}
	return newBatchProcessor(e, c, nil)
}

// newBatchProcessor starts a processor with c; handle receives what the
// export goroutine reports (otel.Handle when nil).
func newBatchProcessor(e sdktrace.SpanExporter, c batchConfig, handle func(error)) *batchProcessor {
	c.maxBatch = min(c.maxBatch, c.maxQueue)
	if handle == nil {
		// Looked up on every report, not once: a driver may set its error
		// handler after building the provider.
		handle = otel.Handle
	}
	// Both slices start with room for a batch (512 at most) and grow, up to
	// the queue size, with the traffic; then they are only reused.
	initial := min(c.maxBatch, defaultMaxExportBatchSize)
	p := &batchProcessor{
		exporter: e,
		cfg:      c,
		handle:   handle,
		queue:    make([]sdktrace.ReadOnlySpan, 0, initial),
		spare:    make([]sdktrace.ReadOnlySpan, 0, initial),
		full:     make(chan struct{}, 1),
		flushes:  make(chan flushRequest),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go p.run()
	return p
}

// batchProcessor is NewBatchProcessor's processor.
type batchProcessor struct {
	exporter sdktrace.SpanExporter
	cfg      batchConfig
	handle   func(error)

	mu sync.Mutex
	// queue holds the ended spans not yet taken for export, at most
	// cfg.maxQueue of them.
	queue []sdktrace.ReadOnlySpan
	// dropped counts the spans dropped since the last export.
	dropped int
	// stopped is set by Shutdown; OnEnd then drops spans.
	stopped bool
	// signalled is set when OnEnd puts a token in full, and cleared when
	// the export goroutine takes the queue: the spans ended in between do
	// not touch the channel.
	signalled bool

	// spare is the queue's other slice, owned by the export goroutine: it
	// becomes the queue when the queue is taken for export, and the slice
	// taken becomes the spare once exported.
	spare []sdktrace.ReadOnlySpan

	// full holds a token when a full batch is waiting; OnEnd never blocks
	// on it.
	full    chan struct{}
	flushes chan flushRequest
	// stop is closed by the first Shutdown, after stopped is set and
	// stopCtx written.
	stop     chan struct{}
	stopOnce sync.Once
	stopCtx  context.Context
	// done is closed when the goroutine has exported the last spans and
	// shut the exporter down; stopErr, written before, is what that gave.
	done    chan struct{}
	stopErr error
}

// flushRequest asks the export goroutine to export everything queued, with
// ctx, and to send the outcome on done.
type flushRequest struct {
	ctx  context.Context
	done chan error
}

// OnStart does nothing: spans are exported when they end.
func (*batchProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s for export when it is sampled. It never blocks: when the
// queue is full, s is dropped and counted. After Shutdown it drops s.
func (p *batchProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	if len(p.queue) >= p.cfg.maxQueue {
		p.dropped++
		p.mu.Unlock()
		return
	}
	p.queue = append(p.queue, s)
	wake := !p.signalled && len(p.queue) >= p.cfg.maxBatch
	if wake {
		p.signalled = true
	}
	p.mu.Unlock()
	if wake {
		// A token left from before will do as well: the goroutine takes
		// every full batch when it wakes.
		select {
		case p.full <- struct{}{}:
		default:
		}
	}
}

// ForceFlush exports every span ended before the call, with ctx, and waits
// for the export, returning its error, or ctx.Err() if ctx ends first (an
// export under way then goes on with the ended ctx, which exporters take as
// a cancellation). After Shutdown it does nothing.
func (p *batchProcessor) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	req := flushRequest{ctx: ctx, done: make(chan error, 1)}
	select {
	case p.flushes <- req:
	case <-p.stop:
		// Shutdown exports what is queued.
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown stops taking spans, exports the queued ones, then shuts the
// exporter down, once, with ctx; it returns what those gave, or ctx.Err()
// if ctx ends first (the goroutine then finishes with the ended ctx, so it
// does not linger). Later calls wait for the same shutdown and return the
// same result.
func (p *batchProcessor) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.mu.Unlock()
		p.stopCtx = ctx
		close(p.stop)
	})
	select {
	case <-p.done:
		return p.stopErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the export goroutine.
func (p *batchProcessor) run() {
	defer close(p.done)
	timer := time.NewTimer(p.cfg.scheduleDelay)
	defer timer.Stop()
	background := context.Background()
	for {
		select {
		case <-p.stop:
			// Everything OnEnd queued is in the queue: stopped was set
			// under the mutex before stop was closed.
			err := p.export(p.stopCtx, false)
			p.stopErr = errors.Join(err, p.exporter.Shutdown(p.stopCtx))
			return
		case <-timer.C:
			if err := p.export(background, false); err != nil {
				p.handle(err)
			}
		case <-p.full:
			if err := p.export(background, true); err != nil {
				p.handle(err)
			}
		case req := <-p.flushes:
			req.done <- p.export(req.ctx, false)
		}
		// The schedule delay runs from the last export, as the SDK's.
		timer.Reset(p.cfg.scheduleDelay)
	}
}

// export takes the queued spans, only whole batches of them when
// fullOnly, and hands them to the exporter a batch at a time. It reports
// the spans dropped since the previous export to p.handle and returns the
// exporter's errors. Only the export goroutine calls it.
func (p *batchProcessor) export(ctx context.Context, fullOnly bool) error {
	p.mu.Lock()
	n := len(p.queue)
	if fullOnly {
		// The rest waits for its batch to fill or for the timer, so that a
		// steady flow of spans is exported in full batches.
		n -= n % p.cfg.maxBatch
	}
	dropped := p.dropped
	p.dropped = 0
	// What stays is less than a batch (or nothing): the next full batch
	// signals again.
	p.signalled = false
	var taken []sdktrace.ReadOnlySpan
	if n > 0 {
		taken = p.queue[:n]
		rest := p.queue[n:]
		next := append(p.spare[:0], rest...)
		clear(rest)
		p.queue, p.spare = next, nil
	}
	p.mu.Unlock()

	if dropped > 0 {
		p.handle(fmt.Errorf("%w: %d since the previous export (queue size %d)", ErrQueueFull, dropped, p.cfg.maxQueue))
	}
	if n == 0 {
		return nil
	}
	var errs error
	for batch := taken; len(batch) > 0; {
		k := min(len(batch), p.cfg.maxBatch)
		ectx, cancel := context.WithTimeoutCause(ctx, p.cfg.exportTimeout, errExportTimeout)
		// Capacity k: an exporter that appends to its batch must not write
		// over the next one.
		errs = errors.Join(errs, p.exporter.ExportSpans(ectx, batch[:k:k]))
		cancel()
		batch = batch[k:]
	}
	// The exporter may not keep the slice (the SDK's contract); the spans
	// are let go and the slice is the next spare.
	clear(taken)
	p.spare = taken[:0]
	return errs
}

// MarshalLog is what the SDK's logger prints for the processor.
func (p *batchProcessor) MarshalLog() any {
	return struct {
		Type               string
		SpanExporter       string
		ScheduleDelay      time.Duration
		ExportTimeout      time.Duration
		MaxQueueSize       int
		MaxExportBatchSize int
	}{
		Type:               "tracing.BatchProcessor",
		SpanExporter:       fmt.Sprintf("%T", p.exporter),
		ScheduleDelay:      p.cfg.scheduleDelay,
		ExportTimeout:      p.cfg.exportTimeout,
		MaxQueueSize:       p.cfg.maxQueue,
		MaxExportBatchSize: p.cfg.maxBatch,
	}
}

// nopProcessor is the processor of a nil exporter.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) ForceFlush(context.Context) error                { return nil }
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
