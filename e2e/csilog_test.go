package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// csiCall is one call the driver answered, read from its debug log: the logging middleware
// writes a "request" line with the redacted payload and a "call" line with the code.
type csiCall struct {
	Method  string
	Code    string
	Error   string
	Request map[string]any
}

func (c csiCall) String() string {
	if c.Error != "" {
		return fmt.Sprintf("%s %s (%s)", c.Method, c.Code, c.Error)
	}
	return c.Method + " " + c.Code
}

// driverLog reads a driver's JSON log from a byte offset on.
type driverLog struct{ path string }

func (l driverLog) size() int64 {
	fi, err := os.Stat(l.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// calls returns the calls answered in the log from offset on, in the order they ended.
func (l driverLog) calls(from int64) ([]csiCall, error) {
	data, err := os.ReadFile(l.path)
	if err != nil {
		return nil, fmt.Errorf("driver log: %w", err)
	}
	if from > int64(len(data)) {
		from = int64(len(data))
	}
	requests := map[string]map[string]any{}
	var out []csiCall
	sc := bufio.NewScanner(bytes.NewReader(data[from:]))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e struct {
			Msg       string         `json:"msg"`
			Method    string         `json:"method"`
			RequestID string         `json:"request_id"`
			Code      string         `json:"code"`
			Error     string         `json:"error"`
			Request   map[string]any `json:"request"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Method == "" {
			continue
		}
		switch e.Msg {
		case "request":
			requests[e.RequestID] = e.Request
		case "call":
			out = append(out, csiCall{Method: e.Method, Code: e.Code, Error: e.Error, Request: requests[e.RequestID]})
			delete(requests, e.RequestID)
		}
	}
	return out, sc.Err()
}

// background are calls the sidecars make on their own schedule (probes, capability and
// capacity polls): listed once, not under every step.
var background = map[string]bool{
	"Probe": true, "GetPluginInfo": true, "GetPluginCapabilities": true, "ControllerGetCapabilities": true,
	"GroupControllerGetCapabilities": true, "GetCapacity": true, "NodeGetCapabilities": true,
}

// summarize lists calls as "Method CODE xN" in first-seen order, leaving out background calls
// unless all is set.
func summarize(calls []csiCall, all bool) string {
	type key struct{ m, c string }
	var order []key
	n := map[key]int{}
	for _, c := range calls {
		if background[c.Method] && !all {
			continue
		}
		k := key{c.Method, c.Code}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	var parts []string
	for _, k := range order {
		s := k.m + " " + k.c
		if n[k] > 1 {
			s += fmt.Sprintf(" x%d", n[k])
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// find returns the calls of one method.
func find(calls []csiCall, method string) []csiCall {
	var out []csiCall
	for _, c := range calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}
