# catalogbot's container image for people who build with Docker or Buildah:
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t catalogbot .
# Without a daemon, deploy/imagebuild makes the same kind of image (see docs/setup.md).
# For reproducible builds, pin both images by digest: --build-arg GO_IMAGE=golang@sha256:...
ARG GO_IMAGE=golang:1.26.8-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
# Static binary: no cgo (the SQLite driver is pure Go), no libc needed at run time.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
      -o /out/catalogbot ./cmd/catalogbot
# The directories the server writes to, owned by the runtime user. In
# Kubernetes they are volumes (the root file system is read-only there).
RUN mkdir -p /out/rootfs/tmp /out/rootfs/var/lib/catalogbot /out/rootfs/var/cache/catalogbot \
 && chmod 1777 /out/rootfs/tmp \
 && chown 65532:65532 /out/rootfs/var/lib/catalogbot /out/rootfs/var/cache/catalogbot

# scratch plus CA certificates: nothing else runs in the container. git is not
# needed: the App fetches repositories with go-git.
FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="catalogbot" \
      org.opencontainers.image.source="https://github.com/catalogbot/catalogbot" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/rootfs/ /
COPY --from=build /out/catalogbot /usr/local/bin/catalogbot
USER 65532:65532
WORKDIR /var/lib/catalogbot
ENV CATALOGBOT_DATA_DIR=/var/lib/catalogbot \
    CATALOGBOT_GIT_CACHE_DIR=/var/cache/catalogbot/git
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/catalogbot"]
CMD ["serve"]
