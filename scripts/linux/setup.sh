#!/usr/bin/env bash
# Installs what the Linux build and tests need, on a fresh machine or an up-to-date one alike: it only
# installs what is missing, so running it again is quick and changes nothing.
#   - the pinned Rust toolchain and the x86_64-pc-windows-msvc and x86_64-pc-windows-gnu targets
#     (rust-toolchain.toml), via rustup
#   - osslsigncode and openssl (test signing), from Debian's packages
#   - llvm-rc (compiles the counter names and version resource into pmupcw.sys), from Debian's llvm
#   - x86_64-w64-mingw32-gcc (links the Windows test harness, crates/pdh-harness), from Debian's mingw-w64
#   - cargo-make (the task runner) and cargo-nextest (the test runner), from crates.io
set -euo pipefail
cd "$(dirname "$0")/../.."

CARGO_MAKE_VERSION=0.37.24
CARGO_NEXTEST_VERSION=0.9.143

say() { printf 'setup: %s\n' "$*"; }

as_root() {
    if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

install_debian_packages() {
    local missing=()
    command -v osslsigncode >/dev/null || missing+=(osslsigncode)
    command -v openssl >/dev/null || missing+=(openssl)
    command -v llvm-rc >/dev/null || missing+=(llvm)
    command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=(mingw-w64)
    if ((${#missing[@]})); then
        say "installing ${missing[*]} from Debian's packages"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

install_toolchain() {
    command -v rustup >/dev/null || { echo "setup: rustup is required (https://rustup.rs)" >&2; exit 1; }
    # Installs the channel, components and targets that rust-toolchain.toml names, if any is missing.
    rustup toolchain install >/dev/null 2>&1 || rustup show active-toolchain >/dev/null
    rustup target list --installed | grep -qx x86_64-pc-windows-msvc \
        || rustup target add x86_64-pc-windows-msvc
    rustup target list --installed | grep -qx x86_64-pc-windows-gnu \
        || rustup target add x86_64-pc-windows-gnu
}

# cargo_tool NAME VERSION: installs the crate NAME at VERSION unless `cargo SUBCOMMAND --version`
# already reports it.
cargo_tool() {
    local crate=$1 version=$2 subcommand=${1#cargo-}
    if cargo "$subcommand" --version 2>/dev/null | grep -q "$version"; then
        return
    fi
    if [[ $crate == cargo-nextest ]] && cargo nextest --version >/dev/null 2>&1; then
        return # any nextest will do; the machine image ships one
    fi
    say "installing $crate $version from crates.io (a few minutes, once)"
    cargo install --locked --quiet "$crate" --version "$version"
}

install_debian_packages
install_toolchain
cargo_tool cargo-make "$CARGO_MAKE_VERSION"
cargo_tool cargo-nextest "$CARGO_NEXTEST_VERSION"
say "ready: $(rustc --version), $(cargo make --version), $(cargo nextest --version | head -1)"
