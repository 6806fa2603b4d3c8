#!/bin/sh
# Build the Helm-compatible renderer (main.go) into OUT, offline, with Debian's Go and sprig:
#   apt-get install golang-go golang-github-masterminds-sprig-dev
#   deploy/helm/render/build.sh build/helm-render/render
# Debian installs Go libraries in GOPATH layout under /usr/share/gocode, so this builds in GOPATH
# mode: the package is copied into a temporary GOPATH whose go.mod lets the /v3 import of sprig
# resolve ("minimal module compatibility"). With network access, `go build` in module mode works too.
set -eu
if [ $# -ne 1 ]; then
  echo "usage: $0 OUTPUT" >&2
  exit 2
fi
case $1 in
  /*) out=$1 ;;
  *) out=$(pwd)/$1 ;;
esac
src=$(cd "$(dirname "$0")" && pwd)
for dir in /usr/share/gocode/src/github.com/Masterminds/sprig /usr/share/gocode/src/gopkg.in/yaml.v2; do
  if [ ! -d "$dir" ]; then
    echo "$0: $dir is missing: apt-get install golang-go golang-github-masterminds-sprig-dev" >&2
    exit 1
  fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/strata-render" "$(dirname "$out")"
cp "$src/main.go" "$src/go.mod" "$work/src/strata-render/"
cd "$work/src/strata-render"
GO111MODULE=off GOPATH="$work:/usr/share/gocode" GOFLAGS= go build -o "$out" .
