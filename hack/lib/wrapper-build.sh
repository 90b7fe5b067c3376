# Sourced by the scripts that build a command from the Go module proxy whose module refuses a
# plain `go install PKG@VERSION` (replace directives in its go.mod): a throwaway wrapper module
# requires the modules and builds the package. Idempotent: an existing OUT is kept.
#
# wrapper_build WHAT OUT PKG LDFLAGS MODULE@VERSION...
#   prints OUT's path when done; WHAT names the build in the progress line.
wrapper_build() {
  local what="$1" out="$2" pkg="$3" ldflags="$4"
  shift 4
  if [[ -x "$out" ]]; then
    echo "$out"
    return 0
  fi
  mkdir -p "$(dirname "$out")"
  local work
  work="$(mktemp -d)"
  # shellcheck disable=SC2064 # the folder is known now
  trap "rm -rf '$work'" EXIT
  echo "building ${what} (a few minutes on a cold cache)" >&2
  (
    export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
    cd "$work"
    go mod init wrapper >/dev/null 2>&1
    printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >tools.go
    go get "$@" >/dev/null 2>&1 || go get "$@"
    go mod tidy >/dev/null 2>&1 || go mod tidy
    go build -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg"
  )
  mv "$out.tmp" "$out"
  echo "$out"
}
