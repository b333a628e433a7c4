package plugin

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/csikit/csikit/driver"
)

// Optional interfaces are found by type assertion, so a backend whose method is spelled or typed a
// little wrong does not fail to compile: it silently loses the capability. New refuses such a
// value instead, naming the interface and the signature it expects. A value "means" an interface
// when it has a method of the same name as one of the interface's methods.

// optionalInterfaces lists, per service, every interface the library looks for on its backend:
// those rpcTable names, and Prober.
func optionalInterfaces(svc service) []reflect.Type {
	var out []reflect.Type
	for _, s := range rpcTable {
		if s.service != svc {
			continue
		}
		for _, t := range s.serves {
			if !containsType(out, t) {
				out = append(out, t)
			}
		}
	}
	return append(out, typeOf[driver.Prober]())
}

func containsType(ts []reflect.Type, t reflect.Type) bool {
	for _, o := range ts {
		if o == t {
			return true
		}
	}
	return false
}

// backendKind is a Config field that holds a backend, with the service whose optional interfaces
// are looked for on it.
type backendKind struct {
	field string
	svc   service
	of    func(*Config) any
}

// backendKinds lists every Config field that holds a backend. Config.Prober is not one of them:
// it is typed Prober, so it cannot almost implement it, and nothing else is looked for on it.
// TestBackendKindsCoverEveryBackendField keeps the list complete, so a new kind of backend is
// checked from the start.
var backendKinds = []backendKind{
	{"Controller", svcController, func(c *Config) any { return c.Controller }},
	{"Node", svcNode, func(c *Config) any { return c.Node }},
	{"GroupController", svcGroupController, func(c *Config) any { return c.GroupController }},
	{"SnapshotMetadata", svcSnapshotMetadata, func(c *Config) any { return c.SnapshotMetadata }},
	{"VolumeGroups.Controller", svcVolumeGroup, func(c *Config) any {
		if c.VolumeGroups == nil {
			return nil
		}
		return c.VolumeGroups.Controller
	}},
	{"COSI.Provisioner", svcCOSIProvisioner, func(c *Config) any {
		if c.COSI == nil {
			return nil
		}
		return c.COSI.Provisioner
	}},
}

// checkNearMisses reports every optional interface a configured backend means to implement but
// does not.
func checkNearMisses(cfg *Config) error {
	var problems []string
	for _, k := range backendKinds {
		v := k.of(cfg)
		if v == nil {
			continue
		}
		for _, it := range optionalInterfaces(k.svc) {
			if p := nearMiss(reflect.TypeOf(v), it); p != "" {
				problems = append(problems, fmt.Sprintf("Config.%s (%T): %s", k.field, v, p))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New("backend does not implement the interfaces it seems meant to: " + strings.Join(problems, "; "))
	}
	return nil
}

// nearMiss describes how t falls short of the interface it has a method of, or returns "".
func nearMiss(t, iface reflect.Type) string {
	if t.Implements(iface) {
		return ""
	}
	var have, wrong, missing []string
	for i := range iface.NumMethod() {
		want := iface.Method(i)
		got, ok := t.MethodByName(want.Name)
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s%s", want.Name, signature(want.Type)))
		case !sameSignature(got.Type, want.Type, t.Kind() != reflect.Interface):
			wrong = append(wrong, fmt.Sprintf("%s is %s, want %s", want.Name, signature(dropReceiver(got.Type, t.Kind() != reflect.Interface)), signature(want.Type)))
		default:
			have = append(have, want.Name)
		}
	}
	if len(have) == 0 && len(wrong) == 0 {
		return ""
	}
	name := iface.String()
	var parts []string
	if len(wrong) > 0 {
		parts = append(parts, "wrong signature: "+strings.Join(wrong, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	return fmt.Sprintf("it has methods of %s but does not implement it (%s), so the capability %s serves would silently disappear",
		name, strings.Join(parts, "; "), name)
}

// sameSignature compares a method of a concrete type (whose first input is the receiver) with an
// interface method.
func sameSignature(got, want reflect.Type, hasReceiver bool) bool {
	return dropReceiver(got, hasReceiver).String() == want.String()
}

// dropReceiver returns a method's type without its receiver, as an interface method's type is.
func dropReceiver(m reflect.Type, hasReceiver bool) reflect.Type {
	if !hasReceiver {
		return m
	}
	in := make([]reflect.Type, 0, m.NumIn()-1)
	for i := 1; i < m.NumIn(); i++ {
		in = append(in, m.In(i))
	}
	out := make([]reflect.Type, 0, m.NumOut())
	for i := range m.NumOut() {
		out = append(out, m.Out(i))
	}
	return reflect.FuncOf(in, out, m.IsVariadic())
}

// signature prints a method type without the "func" keyword.
func signature(m reflect.Type) string { return strings.TrimPrefix(m.String(), "func") }
