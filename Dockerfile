# tlsbench as one static binary on a distroless base (CA certificates,
# no shell, a non-root user); the image `tlsbench kube --image` names.
#   docker build -t REGISTRY/tlsbench:VERSION --build-arg VERSION=VERSION .
# The Go version is go.mod's (a test checks they agree).
FROM golang:1.26.8 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
RUN bash scripts/build-static.sh /out/tlsbench "$VERSION"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tlsbench /usr/local/bin/tlsbench
# By number: the kubelet cannot check that a named user is not root
# (kube.ImageUID; the Job's runAsUser and runAsGroup say the same).
USER 65532:65532
ENTRYPOINT ["tlsbench"]
