// Command mkimage writes an OCI image (an image layout in a tar, the form `ctr images import`
// reads) of static files on an empty base, reproducibly: sorted entries, fixed times and
// owners, canonical JSON. The node tier's images (the pod sandbox's pause, a busybox for test
// pods) are built with it and imported into containerd from the file, never pulled.
//
// Usage: mkimage --ref NAME:TAG --out ARCHIVE [--entrypoint ARG]... [--env K=V]...
//
//	[--file DEST=SRC]... [--symlink DEST=TARGET]...
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

// epoch is every timestamp in the image: the bytes depend on the inputs only.
var epoch = time.Unix(0, 0).UTC()

type entry struct {
	name     string
	mode     int64
	data     []byte
	linkname string
	dir      bool
}

func main() {
	ref := flag.String("ref", "", "the image's name, NAME:TAG")
	out := flag.String("out", "", "the archive to write")
	var entrypoint, env, files, links list
	flag.Var(&entrypoint, "entrypoint", "one argument of the entrypoint (repeatable, in order)")
	flag.Var(&env, "env", "K=V in the image's environment (repeatable)")
	flag.Var(&files, "file", "DEST=SRC: the file SRC at DEST, mode 0755 (repeatable)")
	flag.Var(&links, "symlink", "DEST=TARGET: a symbolic link (repeatable)")
	flag.Parse()
	if err := run(*ref, *out, entrypoint, env, files, links); err != nil {
		fmt.Fprintf(os.Stderr, "mkimage: %v\n", err)
		os.Exit(1)
	}
}

func run(ref, out string, entrypoint, env, files, links []string) error {
	if ref == "" || out == "" || flag.NArg() != 0 || len(entrypoint) == 0 {
		return fmt.Errorf("usage: mkimage --ref NAME:TAG --out ARCHIVE --entrypoint ARG... [--env K=V]... [--file DEST=SRC]... [--symlink DEST=TARGET]...")
	}
	if i := strings.LastIndex(ref, ":"); i <= 0 || strings.Contains(ref[i:], "/") {
		return fmt.Errorf("--ref %q is not NAME:TAG", ref)
	}
	entries := map[string]entry{}
	addDirs := func(p string) {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			entries[d] = entry{name: d, mode: 0o755, dir: true}
		}
	}
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok || !path.IsAbs(dest) {
			return fmt.Errorf("--file %q is not /DEST=SRC", f)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(path.Clean(dest), "/")
		entries[name] = entry{name: name, mode: 0o755, data: data}
		addDirs(name)
	}
	for _, l := range links {
		dest, target, ok := strings.Cut(l, "=")
		if !ok || !path.IsAbs(dest) || target == "" {
			return fmt.Errorf("--symlink %q is not /DEST=TARGET", l)
		}
		name := strings.TrimPrefix(path.Clean(dest), "/")
		entries[name] = entry{name: name, mode: 0o777, linkname: target}
		addDirs(name)
	}
	layer, err := tarOf(entries)
	if err != nil {
		return err
	}
	config := map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config":       map[string]any{"Entrypoint": entrypoint, "Env": env},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{digest(layer)}},
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return err
	}
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", configJSON, nil),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar", layer, nil)},
	}
	manifestJSON, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{descriptor("application/vnd.oci.image.manifest.v1+json", manifestJSON,
			map[string]string{"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref})},
	})
	if err != nil {
		return err
	}
	layout := map[string]entry{
		"oci-layout":   {name: "oci-layout", mode: 0o644, data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		"index.json":   {name: "index.json", mode: 0o644, data: index},
		"blobs":        {name: "blobs", mode: 0o755, dir: true},
		"blobs/sha256": {name: "blobs/sha256", mode: 0o755, dir: true},
	}
	for _, blob := range [][]byte{layer, configJSON, manifestJSON} {
		name := "blobs/sha256/" + strings.TrimPrefix(digest(blob), "sha256:")
		layout[name] = entry{name: name, mode: 0o644, data: blob}
	}
	archive, err := tarOf(layout)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, archive, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func digest(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

func descriptor(mediaType string, b []byte, annotations map[string]string) map[string]any {
	d := map[string]any{"mediaType": mediaType, "digest": digest(b), "size": len(b)}
	if annotations != nil {
		d["annotations"] = annotations
	}
	return d
}

// tarOf writes entries sorted by name, owned by root, at the epoch.
func tarOf(entries map[string]entry) ([]byte, error) {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, n := range names {
		e := entries[n]
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatUSTAR}
		switch {
		case e.dir:
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		case e.linkname != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.linkname
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := w.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
