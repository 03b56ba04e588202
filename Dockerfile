# syntax=docker/dockerfile:1
# statusfold: one static binary on distroless, running as a non-root user.
#   docker build -t ghcr.io/statusfold/statusfold:dev .
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=""
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/statusfold ./cmd/statusfold

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/statusfold /statusfold
USER 65532:65532
ENTRYPOINT ["/statusfold"]
CMD ["manager"]
