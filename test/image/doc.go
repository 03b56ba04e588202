// Package image tests the container image that `make image` builds (hack/image): it reads the
// OCI image layout with the standard library only, unpacks the layers and runs the binary from
// them.
package image
