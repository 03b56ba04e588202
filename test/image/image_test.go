package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/statusfold/statusfold/test/framework"
)

// The parts of the OCI image spec the test reads.
type (
	descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int64             `json:"size"`
		Annotations map[string]string `json:"annotations"`
	}
	index struct {
		Manifests []descriptor `json:"manifests"`
	}
	manifest struct {
		MediaType string       `json:"mediaType"`
		Config    descriptor   `json:"config"`
		Layers    []descriptor `json:"layers"`
	}
	imageConfig struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Config       struct {
			User       string            `json:"User"`
			Entrypoint []string          `json:"Entrypoint"`
			Cmd        []string          `json:"Cmd"`
			Env        []string          `json:"Env"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
	}
)

// TestMakeImage runs `make image` into a temporary folder and checks what it wrote: an OCI
// layout whose blobs match their digests, a config that runs /statusfold as 65532:65532 with
// OCI labels, one layer holding a static binary, a CA bundle and passwd/group entries for the
// user — and the binary, run from the unpacked layer, prints the version the image was built with.
func TestMakeImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the static binary and the image (not run with -short)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("runs the linux binary from the image")
	}
	out := t.TempDir()
	const version = "v0.0.0-imagetest"
	start := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "-C", framework.RepoRoot(), "image",
		"IMAGE_DIR="+out, "VERSION="+version, "IMAGE_ARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, b)
	}
	t.Logf("make image: %s", time.Since(start).Round(time.Second))

	layoutDir := filepath.Join(out, "oci")
	m := checkLayout(t, layoutDir, version)
	root := t.TempDir()
	var size int64
	for _, l := range m.Layers {
		size += l.Size
		unpack(t, blobPath(t, layoutDir, l), root)
	}
	t.Logf("image: %d layer(s), %.1f MB compressed", len(m.Layers), float64(size)/1e6)
	checkRootFS(t, root, version)

	// The `docker load` tarball names the same config.
	var dockerManifest []struct {
		Config   string
		RepoTags []string
	}
	tarConfig := readTarFile(t, filepath.Join(out, "statusfold.tar"), "manifest.json")
	if err := json.Unmarshal(tarConfig, &dockerManifest); err != nil || len(dockerManifest) != 1 {
		t.Fatalf("statusfold.tar manifest.json: %v %s", err, tarConfig)
	}
	if want := strings.TrimPrefix(m.Config.Digest, "sha256:"); !strings.Contains(dockerManifest[0].Config, want) || len(dockerManifest[0].RepoTags) != 1 {
		t.Errorf("statusfold.tar: config %s tags %v, want config %s and one tag", dockerManifest[0].Config, dockerManifest[0].RepoTags, want)
	}
}

// checkLayout checks the OCI layout in layoutDir — one manifest, named; OCI media types; a config
// for linux on this architecture that runs /statusfold manager as 65532:65532 with OCI labels of
// version — and returns its manifest.
func checkLayout(t *testing.T, layoutDir, version string) manifest {
	t.Helper()
	var idx index
	readJSON(t, filepath.Join(layoutDir, "index.json"), &idx)
	if len(idx.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(idx.Manifests))
	}
	if got := idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got == "" {
		t.Errorf("index.json: no org.opencontainers.image.ref.name annotation")
	}
	var m manifest
	readJSON(t, blobPath(t, layoutDir, idx.Manifests[0]), &m)
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
		t.Errorf("media types: manifest %q, config %q; want OCI's", m.MediaType, m.Config.MediaType)
	}
	var cfg imageConfig
	readJSON(t, blobPath(t, layoutDir, m.Config), &cfg)
	c := cfg.Config
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if c.User != "65532:65532" {
		t.Errorf("config User %q, want 65532:65532 (non-root)", c.User)
	}
	if !reflect.DeepEqual(c.Entrypoint, []string{"/statusfold"}) || !reflect.DeepEqual(c.Cmd, []string{"manager"}) {
		t.Errorf("Entrypoint %q Cmd %q, want [/statusfold] [manager]", c.Entrypoint, c.Cmd)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.title": "statusfold", "org.opencontainers.image.version": version,
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"org.opencontainers.image.source", "org.opencontainers.image.revision", "org.opencontainers.image.created"} {
		if c.Labels[k] == "" {
			t.Errorf("label %s missing", k)
		}
	}
	return m
}

// checkRootFS checks the unpacked image in root: a static /statusfold that prints version,
// passwd and group entries for 65532, a CA bundle and a sticky, world-writable /tmp.
func checkRootFS(t *testing.T, root, version string) {
	t.Helper()
	bin := filepath.Join(root, "statusfold")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("/statusfold: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("/statusfold is dynamically linked: the image has no libc")
		}
	}
	f.Close()
	got, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("/statusfold version: %v", err)
	}
	if want := "statusfold " + version + "\n"; string(got) != want {
		t.Errorf("/statusfold version printed %q, want %q", got, want)
	}
	passwd := readFile(t, filepath.Join(root, "etc", "passwd"))
	if !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no entry for uid 65532:\n%s", passwd)
	}
	if group := readFile(t, filepath.Join(root, "etc", "group")); !strings.Contains(group, "nonroot:x:65532:") {
		t.Errorf("/etc/group has no entry for gid 65532:\n%s", group)
	}
	if !x509.NewCertPool().AppendCertsFromPEM([]byte(readFile(t, filepath.Join(root, "etc", "ssl", "certs", "ca-certificates.crt")))) {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt holds no certificate")
	}
	if fi, err := os.Stat(filepath.Join(root, "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("/tmp: want a world-writable sticky folder, got %v %v", fi, err)
	}
}

// blobPath returns the path of d's blob in the layout, after checking its size and digest.
func blobPath(t *testing.T, layoutDir string, d descriptor) string {
	t.Helper()
	alg, hexDigest, ok := strings.Cut(d.Digest, ":")
	if !ok || alg != "sha256" {
		t.Fatalf("digest %q: want sha256", d.Digest)
	}
	p := filepath.Join(layoutDir, "blobs", alg, hexDigest)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: %d bytes with digest %x, descriptor says %d bytes", d.Digest, len(b), sum, d.Size)
	}
	return p
}

// unpack extracts a gzip-compressed layer into root (regular files and folders only, which is
// all the image has).
func unpack(t *testing.T, layer, root string) {
	t.Helper()
	f, err := os.Open(layer)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("layer %s: %v", layer, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("layer entry %q leaves the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			var buf bytes.Buffer
			if _, err := io.Copy(&buf, tr); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, buf.Bytes(), os.FileMode(h.Mode).Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("layer entry %q: unexpected type %c", h.Name, h.Typeflag)
		}
	}
}

func modeBits(mode int64) os.FileMode {
	if mode&0o1000 != 0 {
		return os.ModeSticky
	}
	return 0
}

func readTarFile(t *testing.T, path, name string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s: no %s: %v", path, name, err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(readFile(t, path)), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
