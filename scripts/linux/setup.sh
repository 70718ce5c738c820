#!/usr/bin/env bash
# Installs what the Linux build and tests need, on a fresh machine or an up-to-date one alike: it only
# installs what is missing, so running it again is quick and changes nothing.
#   - the pinned Rust toolchain and the x86_64-pc-windows-msvc and x86_64-pc-windows-gnu targets
#     (rust-toolchain.toml), via rustup
#   - osslsigncode and openssl (test signing), from Debian's packages
#   - llvm-rc (compiles the counter names and version resource into pmupcw.sys), from Debian's llvm
#   - x86_64-w64-mingw32-gcc (links the Windows test harness, crates/pdh-harness), from Debian's mingw-w64
#   - gcab (the attestation-submission cabinet), zip (Info-ZIP: the downloadable pmupcw-package.zip),
#     flock (util-linux: overlapping package runs wait for each other) and git (the source's time,
#     which the build number comes from), from Debian's packages
#   - cargo-make (the task runner) and cargo-nextest (the test runner), from crates.io
# Then it prints the version of every external tool the build and the tests run, and fails, saying
# which version is needed and why, where a tool is older than the oldest one the project was tested
# with. The tests read only these tools' exit statuses and outputs that we parse ourselves, never
# their wording, which differs between builds (osslsigncode 2.5 and 2.9 word catalog failures
# differently).
set -euo pipefail
cd "$(dirname "$0")/../.."

CARGO_MAKE_VERSION=0.37.24
CARGO_NEXTEST_VERSION=0.9.143
MIN_CARGO_NEXTEST=0.9.91
# The oldest versions tested (README, "On a fresh Linux machine"): Debian 12's osslsigncode (verify
# -catalog, CAT signing) and llvm (llvm-rc's /no-preprocess, which LLVM 13 added).
MIN_OSSLSIGNCODE=2.5
MIN_LLVM=13

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
    command -v gcab >/dev/null || missing+=(gcab)
    command -v zip >/dev/null || missing+=(zip)
    command -v flock >/dev/null || missing+=(util-linux)
    command -v git >/dev/null || missing+=(git)
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
    if [[ $crate == cargo-nextest ]] \
        && at_least "$(first_version "$(cargo nextest --version 2>/dev/null | head -1)")" "$MIN_CARGO_NEXTEST"; then
        return # the machine image ships one; .config/nextest.toml's test priorities need 0.9.91
    fi
    say "installing $crate $version from crates.io (a few minutes, once)"
    cargo install --locked --quiet "$crate" --version "$version"
}

# first_version TEXT: the first dotted version number in TEXT (e.g. 2.9 from "osslsigncode 2.9, using:").
first_version() {
    grep -oE '[0-9]+(\.[0-9]+)+' <<<"$1" | head -1
}

# at_least HAVE WANT: whether version HAVE >= WANT (sort -V order).
at_least() {
    [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1) == "$2" ]]
}

# require NAME HAVE WANT WHY: fails setup when NAME's version HAVE is older than WANT.
require() {
    if ! at_least "$2" "$3"; then
        echo "setup: $1 $2 is too old: version $3 or later is needed ($4)." >&2
        echo "setup: install a newer $1 (Debian 12 or later ships one) and run setup again." >&2
        exit 1
    fi
}

# origin COMMAND: where COMMAND runs from, and the version of the Debian package that owns that file.
origin() {
    local path package
    path=$(readlink -f "$(command -v "$1")")
    package=$(dpkg-query -S "$path" 2>/dev/null | head -1 | cut -d: -f1)
    if [[ -n $package ]]; then
        echo "$path, Debian package $package $(dpkg-query -W -f='${Version}' "$package")"
    else
        echo "$path, not from a Debian package"
    fi
}

report_versions() {
    local osslsigncode llvm rust_lld
    osslsigncode=$(first_version "$(osslsigncode --version 2>&1 | head -1)")
    llvm=$(first_version "$(llvm-config --version 2>/dev/null || dpkg-query -W -f='${Version}' llvm)")
    rust_lld="$(rustc --print sysroot)/lib/rustlib/$(rustc --print host-tuple)/bin/rust-lld"
    say "tool versions:"
    say "  rustc                  $(rustc --version)"
    say "  cargo                  $(cargo --version)"
    say "  rust-lld               $("$rust_lld" -flavor ld --version 2>&1 | head -1)"
    say "  osslsigncode           ${osslsigncode:-?} ($(origin osslsigncode))"
    say "  openssl                $(openssl version | head -1)"
    say "  llvm-rc                llvm ${llvm:-?} ($(origin llvm-rc))"
    say "  x86_64-w64-mingw32-gcc $(x86_64-w64-mingw32-gcc --version | head -1)"
    say "  gcab                   $(gcab --version | head -1) ($(origin gcab))"
    say "  zip                    $(zip -v | sed -n 2p) ($(origin zip))"
    say "  flock                  $(flock --version | head -1)"
    say "  git                    $(git --version | head -1)"
    say "  cargo-make             $(cargo make --version | head -1)"
    say "  cargo-nextest          $(cargo nextest --version | head -1)"
    require osslsigncode "${osslsigncode:-0}" "$MIN_OSSLSIGNCODE" \
        "the catalog tests sign CAT files and look images up with verify -catalog"
    require llvm "${llvm:-0}" "$MIN_LLVM" "the driver build runs llvm-rc /no-preprocess"
}

install_debian_packages
install_toolchain
cargo_tool cargo-make "$CARGO_MAKE_VERSION"
cargo_tool cargo-nextest "$CARGO_NEXTEST_VERSION"
report_versions
say "ready"
