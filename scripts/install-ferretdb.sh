#!/usr/bin/env bash
# Builds the MongoDB-protocol server of `tlsbench lab mongodb`: FerretDB
# v1.24.0 (the last v1; pure Go, SQLite storage, its own TLS listener,
# SCRAM users) from the Go module proxy into /usr/local/bin/ferretdb.
# MongoDB itself is in no package registry this project can use.
# Idempotent: a binary of the wanted version is kept (about 2 minutes to
# build on two cores otherwise).
#
# One change to upstream, marked in the version (+tlsbench.idindex): the
# SQLite backend looks documents up by `_ferretdb_sjson->'$._id'` but
# indexes `_ferretdb_sjson->"_id"`, so SQLite scans the whole collection
# for every find by _id. The patch makes the lookup use the index's
# expression; nothing else changes. (`go install` cannot build it anyway:
# FerretDB wants build/version/version.txt filled in.)
set -euo pipefail

version=v1.24.0
want="$version+tlsbench.idindex"
bin=${FERRETDB_BIN:-/usr/local/bin/ferretdb}

if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null | head -n 1)" = "version: $want" ]; then
  exit 0
fi
command -v go >/dev/null || { echo "install-ferretdb.sh: go is needed to build FerretDB" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
src=$(go mod download -json "github.com/FerretDB/FerretDB@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] || { echo "install-ferretdb.sh: could not download FerretDB $version" >&2; exit 1; }
cp -r "$src" build && chmod -R u+w build && cd build
echo "$want" > build/version/version.txt
meta=internal/backends/sqlite/metadata/metadata.go
sed -i "s|IDColumn = DefaultColumn + \"->'\\\$._id'\"|IDColumn = DefaultColumn + \"->'_id'\"|" "$meta"
grep -qF "IDColumn = DefaultColumn + \"->'_id'\"" "$meta" || { echo "install-ferretdb.sh: the _id patch did not apply" >&2; exit 1; }
GOFLAGS=-mod=mod go build -trimpath -o "$bin.new" ./cmd/ferretdb
mv "$bin.new" "$bin"
echo "installed: ferretdb $want"
