#!/usr/bin/env bash
# Puts Microsoft's signed files back into the package: the last Linux step of the production path
# (docs/signing.md, "Putting the signed files back").
#
#   scripts/linux/production-package.sh SIGNED_DIR [PACKAGE_DIR [OUT_DIR]]
#
# SIGNED_DIR is the driver folder of the signed files Partner Center returns for the submission of
# target/package/pmupcw-attestation.cab (or an HLK submission): pmupcw.inf, pmupcw.sys and pmupcw.cat,
# signed by Microsoft. PACKAGE_DIR is the test-signed package that cabinet was made with (default
# target/package/pmupcw). Writes OUT_DIR (default target/package/pmupcw-production/), the package with Microsoft's
# pmupcw.sys and pmupcw.cat in place of the test-signed ones and without pmupcw.cer (a production
# package needs no certificate and must not invite anyone to trust one), and beside it
# OUT_DIR-package.zip (target/package/pmupcw-production-package.zip) with its .sha256 (scripts/linux/package-zip.sh), the package to
# download. Install-Pmupcw.ps1 installs it as production-signed (docs/install.md).
#
# It refuses, saying why, signed files that are not the package's: an INF other than the package's
# (another build: its DriverVer differs), or a pmupcw.sys or pmupcw.cat without a signature. Whether
# the signature is Microsoft's is for Windows to say: Install-Pmupcw.ps1 reads it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/linux/package-zip.sh

fail() {
    echo "production-package: $*" >&2
    exit 1
}

[[ $# -ge 1 && $# -le 3 ]] || fail "usage: $0 SIGNED_DIR [PACKAGE_DIR [OUT_DIR]]"
signed=$1
package=${2:-target/package/pmupcw}
out_dir=${3:-target/package/pmupcw-production}
out_dir=${out_dir%/}
zip_out=$out_dir-package.zip

[[ -f $package/pmupcw.inf ]] || fail "$package holds no pmupcw.inf: run 'cargo make package' first"
for file in pmupcw.inf pmupcw.sys pmupcw.cat; do
    [[ -f $signed/$file ]] || fail "$signed holds no $file: give the driver folder of Partner Center's signed files"
done
if ! cmp -s "$signed/pmupcw.inf" "$package/pmupcw.inf"; then
    fail "$signed/pmupcw.inf is not $package/pmupcw.inf (DriverVer" \
        "$(sed -n 's/^DriverVer *= *//p' "$signed/pmupcw.inf" | tr -d '\r'), not" \
        "$(sed -n 's/^DriverVer *= *//p' "$package/pmupcw.inf")): these signed files are of another" \
        "submission; submit this package's cabinet, or package the source that was submitted"
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for file in pmupcw.sys pmupcw.cat; do
    osslsigncode extract-signature -in "$signed/$file" -out "$scratch/$file.p7" >/dev/null 2>&1 \
        || fail "$signed/$file carries no signature"
done

# The package's time, from its DriverVer (scripts/linux/driver-ver.sh: the UTC date, and the build
# number the seconds since that midnight halved), so the zip is the same whoever makes it.
driver_ver=$(sed -n 's/^DriverVer *= *//p' "$package/pmupcw.inf")
date_part=${driver_ver%%,*}
build_number=${driver_ver##*.}
epoch=$(($(TZ=UTC date -d "$date_part" +%s) + 2 * build_number))

rm -rf "$out_dir.new"
mkdir -p "$out_dir.new"
for path in "$package"/*; do
    name=${path##*/}
    case $name in
        pmupcw.cer | pmupcw.sys | pmupcw.cat) ;;
        *) cp -L "$path" "$out_dir.new/$name" ;;
    esac
done
cp "$signed/pmupcw.sys" "$signed/pmupcw.cat" "$out_dir.new/"
rm -rf "$out_dir"
mv "$out_dir.new" "$out_dir"
make_zip "$out_dir" "$zip_out" "$epoch"
echo "production-package: $out_dir: $(cd "$out_dir" && ls | tr '\n' ' ')"
echo "production-package: $zip_out, sha256 $(cut -d' ' -f1 "$zip_out.sha256")"
