#!/usr/bin/env bash
# Builds the release driver and assembles the test-signed package in target/package/pmupcw/:
#   pmupcw.sys  the driver, Authenticode-signed with the project's test certificate
#   pmupcw.cer  that certificate (DER), to import into a test machine's Root and TrustedPublisher stores
#   pmupcw.pdb  symbols
#   pmupcw.man  the counter manifest (lodctr /m:)
#   pmupcw.inf  the installation INF, stamped from inf/pmupcw.inx (see stamp_inf below), its DriverVer
#               from scripts/linux/driver-ver.sh
#   pmupcw.cat  the catalog (inf2cat's job, crates/driver-catalog): hashes of pmupcw.inf and the files
#               it names, signed with the test certificate; pnputil requires it
#   *.ps1       scripts/windows/: install, uninstall, Driver Verifier, the one-command VM test (run on
#               the test machine)
#   *.psm1      scripts/windows/: the helpers those scripts share
#   pdh-harness.exe  the PDH stress harness (crates/pdh-harness, cross-compiled with mingw-w64), which
#               Test-Pmupcw.ps1 runs
# and beside it target/package/pmupcw-attestation.cab, the cabinet Partner Center's attestation
# signing takes (docs/signing.md): pmupcw\ holding the INF, the files it installs (pmupcw.sys without
# the test signature, pmupcw.man), the catalog (unsigned: Microsoft makes its own) and pmupcw.pdb;
# and target/package/pmupcw-package.zip, the package's files in the zip a user downloads and unpacks
# on Windows, with pmupcw-package.zip.sha256, its checksum (scripts/linux/package-zip.sh: reproducible).
#
# Nothing is rebuilt or re-signed when nothing changed: the build number comes from the source's time,
# not the clock (scripts/linux/driver-ver.sh), so cargo finds the driver fresh, and a package whose
# inputs (built files, templates, scripts, certificate, these scripts) hash the same is kept as it is.
# Runs that overlap wait for each other (flock on target/package/.lock), and each package is made in
# its own folder, target/package/build.<inputs hash>/, which target/package/pmupcw and the cabinet's
# path are symbolic links to, switched by rename(2): a reader sees the old package or the new one,
# never half of one. The folder before the current one is kept for readers still in it; older ones go.
# The test certificate is made once under target/test-certificate/ and reused until deleted.
# Prints the .sys size, the build time and the cabinet's contents. Run through `cargo make package`.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=x86_64-pc-windows-msvc
build_dir=target/$target/release
cert_dir=target/test-certificate
package_root=target/package
package_link=$package_root/pmupcw
cabinet_name=pmupcw-attestation.cab
cabinet_link=$package_root/$cabinet_name
zip_name=pmupcw-package.zip
zip_link=$package_root/$zip_name

for tool in osslsigncode openssl x86_64-w64-mingw32-gcc gcab zip flock git sha256sum; do
    command -v "$tool" >/dev/null || { echo "package: $tool is missing; run scripts/linux/setup.sh" >&2; exit 1; }
done

mkdir -p "$package_root"
exec 9>"$package_root/.lock"
if ! flock -n 9; then
    echo "package: another package run holds $package_root/.lock; waiting for it"
    flock 9
fi

# The package's time, which its DriverVer carries (scripts/linux/driver-ver.sh): SOURCE_DATE_EPOCH
# when set, else the source's own time (source_epoch: the last commit's, or a later change not yet
# committed). The driver's VERSIONINFO gets the same build number (build.rs reads
# PMUPCW_BUILD_NUMBER), so the image and the INF say the same version, and an unchanged source gives
# an unchanged number, which leaves cargo's build of the driver fresh.
source scripts/linux/driver-ver.sh
source scripts/linux/package-zip.sh
build_epoch=$(package_epoch .)
PMUPCW_BUILD_NUMBER=$(driver_build_number "$build_epoch")
export PMUPCW_BUILD_NUMBER

started_ns=$(date +%s%N)
cargo build --release --locked --target "$target" -p pmupcw
build_ms=$(( ($(date +%s%N) - started_ns) / 1000000 ))
# The PDH stress harness Test-Pmupcw.ps1 runs, built as `cargo make harness` builds it (same target
# directory, so the build is shared with that task and with crates/pdh-harness/tests/cross_compile.rs).
# It is not part of the driver package the INF describes, so the catalog does not cover it.
harness=target/windows-gnu/x86_64-pc-windows-gnu/release/pdh-harness.exe
CARGO_TARGET_DIR=target/windows-gnu cargo build --release --locked --target x86_64-pc-windows-gnu -p pdh-harness
cargo build --release --locked -p driver-catalog

if [[ ! -s $cert_dir/pmupcw-test.key || ! -s $cert_dir/pmupcw-test.pem ]]; then
    echo "package: generating the test-signing certificate in $cert_dir"
    mkdir -p "$cert_dir"
    # Self-signed code-signing certificate, the Linux counterpart of the WDK's makecert test certificate.
    openssl req -x509 -newkey rsa:3072 -sha256 -nodes -days 3650 \
        -subj "/CN=pmupcw Test Signing/O=pmupcw developers" \
        -addext "basicConstraints=critical,CA:FALSE" \
        -addext "keyUsage=critical,digitalSignature" \
        -addext "extendedKeyUsage=codeSigning" \
        -keyout "$cert_dir/pmupcw-test.key.tmp" -out "$cert_dir/pmupcw-test.pem.tmp" 2>/dev/null
    mv "$cert_dir/pmupcw-test.key.tmp" "$cert_dir/pmupcw-test.key"
    mv "$cert_dir/pmupcw-test.pem.tmp" "$cert_dir/pmupcw-test.pem"
fi

# "Stamp" the INF template as the WDK's stampinf does in the Windows flow (`stampinf -d * -a amd64
# -v *`): DriverVer gets the package time's UTC date and the Cargo package version with the build
# number as its fourth part (0.1.0 at 21:30:10 UTC -> 0.1.0.38705; see scripts/linux/driver-ver.sh),
# and the architecture placeholder $ARCH$ becomes amd64. CatalogFile is already pmupcw.cat in the
# template.
stamp_inf() {
    local pkgid stamp
    pkgid=$(cargo pkgid --locked -p pmupcw)
    stamp=$(driver_ver "${pkgid##*[#@]}" "$build_epoch") || return 1
    sed -e "s|^DriverVer[[:space:]]*=.*$|DriverVer   = $stamp|" \
        -e 's|\$ARCH\$|amd64|g' "$1" >"$2"
    grep -q "^DriverVer   = $stamp\$" "$2" \
        || { echo "package: $1 has no DriverVer line to stamp" >&2; return 1; }
    if grep -q '\$ARCH\$' "$2"; then echo "package: $2 still names \$ARCH\$" >&2; return 1; fi
}
staging=$(mktemp -d "$package_root/.staging.XXXXXX")
trap 'rm -rf "$staging"' EXIT
stamp_inf inf/pmupcw.inx "$staging/pmupcw.inf"

# Everything the package is made from; the same hash means the same package.
inputs=$(
    {
        sha256sum "$build_dir/pmupcw.dll" "$build_dir/pmupcw.pdb" manifests/pmupcw.man "$staging/pmupcw.inf" \
            scripts/windows/*.ps1 scripts/windows/*.psm1 "$harness" target/release/driver-catalog \
            "$cert_dir/pmupcw-test.pem" "$cert_dir/pmupcw-test.key" \
            scripts/linux/package.sh scripts/linux/driver-ver.sh scripts/linux/package-zip.sh \
            | sed "s|$staging/||"
        gcab --version
        zip -v | sed -n 2p
    } | sha256sum | cut -c1-16
)
build=build.$inputs

# assemble DIR: the package in DIR/pmupcw, the attestation cabinet in DIR/$cabinet_name and the
# downloadable zip in DIR/$zip_name, with DIR/$zip_name.sha256.
assemble() {
    local dir=$1 package=$1/pmupcw submission=$1/submission/pmupcw
    mkdir -p "$package" "$submission"
    # cargo names the cdylib .dll; a driver image is a .sys. The submission takes the image as built.
    cp "$build_dir/pmupcw.dll" "$submission/pmupcw.sys"
    cp "$build_dir/pmupcw.pdb" "$submission/pmupcw.pdb"
    cp manifests/pmupcw.man "$submission/pmupcw.man"
    cp "$staging/pmupcw.inf" "$submission/pmupcw.inf"
    # The catalog pnputil /add-driver requires (inf2cat + signtool in the WDK flow): SHA-256 hashes of
    # pmupcw.inf and of the files its [SourceDisksFiles] name. A PE file's hash is its Authenticode
    # image hash, which leaves the signature out, so the one catalog covers the unsigned image of the
    # submission and the signed one of the package.
    target/release/driver-catalog --inf "$submission/pmupcw.inf" --out "$submission/pmupcw.cat" \
        --time "$build_epoch" >/dev/null
    (cd "$dir/submission" && gcab --create --zip "../$cabinet_name" pmupcw/pmupcw.inf pmupcw/pmupcw.sys \
        pmupcw/pmupcw.man pmupcw/pmupcw.cat pmupcw/pmupcw.pdb)
    osslsigncode sign -certs "$cert_dir/pmupcw-test.pem" -key "$cert_dir/pmupcw-test.key" \
        -h sha256 -n "pmupcw hardware performance counters" \
        -in "$submission/pmupcw.sys" -out "$package/pmupcw.sys" >/dev/null
    openssl x509 -in "$cert_dir/pmupcw-test.pem" -outform DER -out "$package/pmupcw.cer"
    cp "$submission/pmupcw.pdb" "$submission/pmupcw.man" "$submission/pmupcw.inf" "$package/"
    # The Windows-side scripts and the helper module they share travel with the package they install.
    cp scripts/windows/*.ps1 scripts/windows/*.psm1 "$harness" "$package/"
    osslsigncode sign -certs "$cert_dir/pmupcw-test.pem" -key "$cert_dir/pmupcw-test.key" -h sha256 \
        -in "$submission/pmupcw.cat" -out "$package/pmupcw.cat" >/dev/null
    rm -rf "$dir/submission"

    osslsigncode verify -CAfile "$cert_dir/pmupcw-test.pem" -in "$package/pmupcw.sys" >/dev/null \
        || { echo "package: the signed pmupcw.sys does not verify" >&2; return 1; }
    osslsigncode verify -CAfile "$cert_dir/pmupcw-test.pem" -in "$package/pmupcw.cat" >/dev/null \
        || { echo "package: the signed pmupcw.cat does not verify" >&2; return 1; }
    osslsigncode verify -CAfile "$cert_dir/pmupcw-test.pem" -catalog "$package/pmupcw.cat" \
        -in "$package/pmupcw.sys" >/dev/null \
        || { echo "package: pmupcw.sys is not covered by pmupcw.cat" >&2; return 1; }
    make_zip "$package" "$dir/$zip_name" "$build_epoch"
}

# switch LINK TARGET: LINK becomes a symbolic link to TARGET in one rename(2).
switch() {
    local link=$1 target=$2
    if [[ -d $link && ! -L $link ]]; then rm -rf "$link"; fi # a package folder of an older package.sh
    ln -s "$target" "$link.new.$$"
    mv -T "$link.new.$$" "$link"
}

if [[ $(readlink "$package_link" 2>/dev/null) == "$build/pmupcw" && -d $package_root/$build ]]; then
    echo "package: up to date, nothing rebuilt or re-signed (inputs $inputs)"
else
    if [[ ! -d $package_root/$build ]]; then
        assemble "$staging"
        rm -f "$staging/pmupcw.inf"
        chmod 755 "$staging" # mktemp made it private
        mv -T "$staging" "$package_root/$build"
    fi
    switch "$package_link" "$build/pmupcw"
    switch "$cabinet_link" "$build/$cabinet_name"
    switch "$zip_link" "$build/$zip_name"
    switch "$zip_link.sha256" "$build/$zip_name.sha256"
    touch "$package_root/$build"
    # Keep the package before this one for readers still in it; delete older ones.
    mapfile -t old < <(cd "$package_root" && ls -1dt build.* | grep -vx "$build" | tail -n +2)
    for dir in "${old[@]}"; do rm -rf "${package_root:?}/$dir"; done
    echo "package: made $package_root/$build (inputs $inputs)"
fi

printf 'package: %s -> %s\n' "$package_link" "$(readlink "$package_link")"
printf 'package: pmupcw.sys %d bytes (release, signed)\n' "$(stat -c %s "$package_link/pmupcw.sys")"
printf 'package: contents: %s\n' "$(cd "$package_link" && ls | tr '\n' ' ')"
printf 'package: DriverVer %s\n' "$(sed -n 's/^DriverVer *= *//p' "$package_link/pmupcw.inf")"
printf 'package: %s (attestation submission, unsigned; docs/signing.md):\n' "$cabinet_link"
gcab --list-details "$cabinet_link" | sed 's/^/package:   /'
printf 'package: %s, sha256 %s (%s.sha256)\n' "$zip_link" "$(cut -d' ' -f1 "$zip_link.sha256")" "$zip_link"
printf 'package: driver build took %d.%03d s\n' $((build_ms / 1000)) $((build_ms % 1000))
