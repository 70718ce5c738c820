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
# The test certificate is made once under target/test-certificate/ and reused until deleted.
# Prints the .sys size and the build time. Run through `cargo make package`.
set -euo pipefail
cd "$(dirname "$0")/../.."

target=x86_64-pc-windows-msvc
build_dir=target/$target/release
cert_dir=target/test-certificate
package_dir=target/package/pmupcw

for tool in osslsigncode openssl x86_64-w64-mingw32-gcc; do
    command -v "$tool" >/dev/null || { echo "package: $tool is missing; run scripts/linux/setup.sh" >&2; exit 1; }
done

# The package's build time, which its DriverVer carries (scripts/linux/driver-ver.sh): now, or
# SOURCE_DATE_EPOCH for a reproducible package. The driver's VERSIONINFO gets the same build number
# (build.rs reads PMUPCW_BUILD_NUMBER), so the image and the INF say the same version.
source scripts/linux/driver-ver.sh
build_epoch=${SOURCE_DATE_EPOCH:-$(date +%s)}
PMUPCW_BUILD_NUMBER=$(driver_build_number "$build_epoch")
export PMUPCW_BUILD_NUMBER

started_ns=$(date +%s%N)
cargo build --release --locked --target "$target" -p pmupcw
build_ms=$(( ($(date +%s%N) - started_ns) / 1000000 ))

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

rm -rf "$package_dir"
mkdir -p "$package_dir"
# cargo names the cdylib .dll; a driver image is a .sys.
osslsigncode sign -certs "$cert_dir/pmupcw-test.pem" -key "$cert_dir/pmupcw-test.key" \
    -h sha256 -n "pmupcw hardware performance counters" \
    -in "$build_dir/pmupcw.dll" -out "$package_dir/pmupcw.sys" >/dev/null
openssl x509 -in "$cert_dir/pmupcw-test.pem" -outform DER -out "$package_dir/pmupcw.cer"
cp "$build_dir/pmupcw.pdb" "$package_dir/pmupcw.pdb"
cp manifests/pmupcw.man "$package_dir/pmupcw.man"
# "Stamp" the INF template as the WDK's stampinf does in the Windows flow (`stampinf -d * -a amd64
# -v *`): DriverVer gets the build time's UTC date and the Cargo package version with the build number
# as its fourth part (0.1.0 built at 21:30:10 UTC -> 0.1.0.38705; see scripts/linux/driver-ver.sh),
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
stamp_inf inf/pmupcw.inx "$package_dir/pmupcw.inf"
# The Windows-side scripts (scripts/windows/*.ps1) and the helper module they share travel with the
# package they install.
cp scripts/windows/*.ps1 scripts/windows/*.psm1 "$package_dir/"
# The PDH stress harness Test-Pmupcw.ps1 runs, built as `cargo make harness` builds it (same target
# directory, so the build is shared with that task and with crates/pdh-harness/tests/cross_compile.rs).
# It is not part of the driver package the INF describes, so the catalog does not cover it.
CARGO_TARGET_DIR=target/windows-gnu cargo build --release --locked --target x86_64-pc-windows-gnu -p pdh-harness
cp target/windows-gnu/x86_64-pc-windows-gnu/release/pdh-harness.exe "$package_dir/"
# The catalog pnputil /add-driver requires (inf2cat + signtool in the WDK flow): SHA-256 hashes of
# pmupcw.inf and of the files its [SourceDisksFiles] name, signed with the test certificate. Made last,
# because it hashes the final bytes of the signed .sys and the stamped INF.
cargo build --release --locked -p driver-catalog
catalog_tmp=$(mktemp -d)
target/release/driver-catalog --inf "$package_dir/pmupcw.inf" --out "$catalog_tmp/pmupcw.cat" >/dev/null
osslsigncode sign -certs "$cert_dir/pmupcw-test.pem" -key "$cert_dir/pmupcw-test.key" -h sha256 \
    -in "$catalog_tmp/pmupcw.cat" -out "$package_dir/pmupcw.cat" >/dev/null
rm -rf "$catalog_tmp"

osslsigncode verify -CAfile "$cert_dir/pmupcw-test.pem" -in "$package_dir/pmupcw.sys" >/dev/null \
    || { echo "package: the signed pmupcw.sys does not verify" >&2; exit 1; }
osslsigncode verify -CAfile "$cert_dir/pmupcw-test.pem" -in "$package_dir/pmupcw.cat" >/dev/null \
    || { echo "package: the signed pmupcw.cat does not verify" >&2; exit 1; }
osslsigncode verify -CAfile "$cert_dir/pmupcw-test.pem" -catalog "$package_dir/pmupcw.cat" \
    -in "$package_dir/pmupcw.sys" >/dev/null \
    || { echo "package: pmupcw.sys is not covered by pmupcw.cat" >&2; exit 1; }

printf 'package: %s\n' "$package_dir"
printf 'package: pmupcw.sys %d bytes (release, signed)\n' "$(stat -c %s "$package_dir/pmupcw.sys")"
printf 'package: contents: %s\n' "$(cd "$package_dir" && ls | tr '\n' ' ')"
printf 'package: driver build took %d.%03d s\n' $((build_ms / 1000)) $((build_ms % 1000))
