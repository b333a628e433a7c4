// Command apirecord writes api/csikit.txt, the record of the SDK's exported API, and prints how it
// changed. Run it from anywhere inside the SDK module:
//
//	go run ./internal/apirecord/cmd/apirecord
//
// See package apirecord for the format and the workflow.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/csikit/csikit/internal/apirecord"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "apirecord:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	root, err := moduleRoot(wd, apirecord.Module)
	if err != nil {
		return err
	}
	record, err := apirecord.Generate(ctx, apirecord.Options{Dir: root})
	if err != nil {
		return err
	}
	path := filepath.Join(root, filepath.FromSlash(apirecord.RecordFile))
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the old record: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create the record's directory: %w", err)
	}
	if err := os.WriteFile(path, record, 0o644); err != nil {
		return fmt.Errorf("write the record: %w", err)
	}
	d := apirecord.Compare(old, record)
	fmt.Printf("wrote %s: %d lines, %d added, %d removed\n", path, len(apirecord.Lines(record)), len(d.Added), len(d.Removed))
	fmt.Print(d)
	if bad := d.Incompatible(); len(bad) > 0 {
		fmt.Printf("%d removed or changed line(s) break callers: add an entry under [Unreleased] in CHANGELOG.md.\n", len(bad))
	}
	return nil
}

// moduleRoot returns the nearest directory at or above dir whose go.mod declares module, so
// that the command works from any directory of the module and refuses to run in another one.
func moduleRoot(dir, module string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		f, err := os.Open(filepath.Join(d, "go.mod"))
		if err == nil {
			path, err := modulePath(f)
			f.Close()
			if err != nil {
				return "", fmt.Errorf("read %s: %w", filepath.Join(d, "go.mod"), err)
			}
			if path == module {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside module %s; run from its checkout", dir, module)
		}
	}
}

// modulePath returns the path on a go.mod's module line.
func modulePath(f *os.File) (string, error) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", sc.Err()
}
