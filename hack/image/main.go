// Command image builds statusfold's container image without a container engine: an OCI image
// made from nothing (no base image) holding the static statusfold binary, a CA bundle and a
// passwd/group entry for the non-root user 65532, written as an OCI image layout folder and as a
// tarball that `docker load` and `podman load` accept.
//
// It is a module of its own so that go-containerregistry stays out of statusfold's go.mod: the
// product never imports it, and `make image` runs it with `go run`.
//
//	go run . -binary ../../bin/linux-amd64/statusfold -version v0.1.0 \
//	  -layout ../../bin/image/oci -tarball ../../bin/image/statusfold.tar
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: distroless's "nonroot", which the Deployment's securityContext
// (runAsUser/runAsGroup 65532) and the Dockerfile use too.
const (
	uid      = 65532
	userName = "nonroot"
)

type options struct {
	binary, caBundle, version, revision, source string
	ref, layoutDir, tarballPath, arch           string
	created                                     time.Time
}

func main() {
	var o options
	var epoch int64
	flag.StringVar(&o.binary, "binary", "", "the static statusfold binary (CGO_ENABLED=0) for linux/-arch")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	flag.StringVar(&o.version, "version", "dev", "org.opencontainers.image.version")
	flag.StringVar(&o.revision, "revision", "", "org.opencontainers.image.revision (the git commit)")
	flag.StringVar(&o.source, "source", "https://github.com/statusfold/statusfold", "org.opencontainers.image.source")
	flag.StringVar(&o.ref, "ref", "ghcr.io/statusfold/statusfold:dev", "the image reference recorded in the layout and the tarball")
	flag.StringVar(&o.layoutDir, "layout", "", "write an OCI image layout to this folder (replaced)")
	flag.StringVar(&o.tarballPath, "tarball", "", "write a `docker load` tarball to this file")
	flag.StringVar(&o.arch, "arch", "amd64", "the binary's GOARCH")
	flag.Int64Var(&epoch, "created", 0, "creation time, seconds since the epoch (default $SOURCE_DATE_EPOCH, else 0: reproducible)")
	flag.Parse()
	if epoch == 0 {
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			if _, err := fmt.Sscan(s, &epoch); err != nil {
				fatalf("SOURCE_DATE_EPOCH %q: %v", s, err)
			}
		}
	}
	o.created = time.Unix(epoch, 0).UTC()
	if o.binary == "" || (o.layoutDir == "" && o.tarballPath == "") {
		fatalf("-binary and at least one of -layout, -tarball are required")
	}
	if err := run(o); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "image: "+format+"\n", args...)
	os.Exit(1)
}

func run(o options) error {
	img, err := build(o)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if o.layoutDir != "" {
		if err := os.RemoveAll(o.layoutDir); err != nil {
			return err
		}
		p, err := layout.Write(o.layoutDir, empty.Index)
		if err != nil {
			return fmt.Errorf("layout %s: %w", o.layoutDir, err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": o.ref,
		})); err != nil {
			return fmt.Errorf("layout %s: %w", o.layoutDir, err)
		}
	}
	if o.tarballPath != "" {
		ref, err := name.ParseReference(o.ref)
		if err != nil {
			return fmt.Errorf("-ref %q: %w", o.ref, err)
		}
		if err := os.MkdirAll(filepath.Dir(o.tarballPath), 0o755); err != nil {
			return err
		}
		if err := tarball.WriteToFile(o.tarballPath, ref, img); err != nil {
			return fmt.Errorf("tarball %s: %w", o.tarballPath, err)
		}
	}
	fmt.Printf("%s %s\n", o.ref, digest)
	return nil
}

// build assembles the image: one layer on an empty image, OCI media types, and a config that
// runs /statusfold as 65532:65532.
func build(o options) (v1.Image, error) {
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return nil, fmt.Errorf("-ca-bundle: %w", err)
	}
	layerTar, err := rootfs(o.created, bin, ca)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: o.created}, CreatedBy: "hack/image: statusfold, CA bundle, passwd", Comment: "statusfold " + o.version,
	}})
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "statusfold",
		"org.opencontainers.image.description": "Returns the reported state of KubeStellar-propagated workloads (CombinedStatus, status return)",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
	}
	if o.revision != "" {
		labels["org.opencontainers.image.revision"] = o.revision
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Created = v1.Time{Time: o.created}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint: []string{"/statusfold"},
		Cmd:        []string{"manager"},
		WorkingDir: "/",
		Env: []string{
			"PATH=/",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		Labels: labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// rootfs is the image's only layer: /statusfold, the CA bundle, /etc/passwd and /etc/group with
// root and nonroot, nonroot's home, and a world-writable /tmp (the Deployment mounts an emptyDir
// there; the root file system is read-only).
func rootfs(created time.Time, bin, ca []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/home/%s:/sbin/nologin\n", userName, uid, uid, userName, userName)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid)
	entries := []struct {
		name     string
		mode     int64
		owner    int
		dir      bool
		contents []byte
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, contents: []byte(passwd)},
		{name: "etc/group", mode: 0o644, contents: []byte(group)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, contents: ca},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/" + userName + "/", mode: 0o700, owner: uid, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "statusfold", mode: 0o755, contents: bin},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.owner, Gid: e.owner, ModTime: created, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.contents))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.contents); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
