package endpoint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/csikit/csikit/driver/endpoint"
)

func ExampleParse() {
	for _, s := range []string{
		"unix:///var/lib/kubelet/plugins/example.com/csi.sock",
		"/var/lib/kubelet/plugins/example.com/csi.sock",
		"unix://var/lib/kubelet/plugins/example.com/csi.sock",
	} {
		e, err := endpoint.Parse(s, endpoint.ParseOptions{})
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(e)
	}
	// Output:
	// unix:///var/lib/kubelet/plugins/example.com/csi.sock
	// unix:///var/lib/kubelet/plugins/example.com/csi.sock
	// error: endpoint "unix://var/lib/kubelet/plugins/example.com/csi.sock": unix:// needs an absolute path, written with three slashes, as in "unix:///var/lib/kubelet/plugins/example.com/csi.sock"
}

func ExampleListen() {
	dir, err := os.MkdirTemp("", "csikit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "plugins", "cosi.sock")

	// What a COSI driver would do with os.Getenv("COSI_ENDPOINT").
	e, err := endpoint.Parse("unix://"+sock, endpoint.ParseOptions{RequireSuffix: ".sock"})
	if err != nil {
		fmt.Println("COSI_ENDPOINT:", err)
		return
	}
	l, err := endpoint.Listen(context.Background(), e, endpoint.ListenOptions{Mode: 0o600})
	if err != nil {
		fmt.Println(err)
		return
	}
	fi, _ := os.Stat(sock)
	fmt.Println(l.Addr().Network(), fi.Mode().Perm())

	// grpcServer.Serve(l) would go here; Stop closes l, which removes the
	// socket file.
	l.Close()
	_, err = os.Stat(sock)
	fmt.Println("removed:", os.IsNotExist(err))
	// Output:
	// unix -rw-------
	// removed: true
}
