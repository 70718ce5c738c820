# The downloadable package: pmupcw-package.zip, the package folder's files at the zip's top level (as
# the README's Windows quick start unpacks them with Expand-Archive), and beside it
# pmupcw-package.zip.sha256, its SHA-256 in sha256sum's format ("<hex>  pmupcw-package.zip"), which
# `sha256sum -c` checks on Linux and Get-FileHash's Hash matches on Windows. Sourced by package.sh;
# tests/deployment/download.rs runs make_zip twice on one folder and compares the bytes.
#
# Reproducible: the same files give the same zip, whenever and wherever it is made. Info-ZIP's zip
# (Debian's zip package) stores what it is given, so everything it would take from the machine is
# fixed first: the entries are added in byte order of their names (LC_ALL=C sort), each copied with
# mode 0644 and its modification time set to the package's time (the source's, never the clock's:
# scripts/linux/driver-ver.sh), written in UTC (zip stores MS-DOS local time: TZ=UTC), without the
# extra fields that carry Unix times and owners (-X) and without folder entries (-D).

# make_zip DIR OUT EPOCH: zips the files of DIR (not its subfolders) into OUT and writes OUT.sha256.
make_zip() {
    local dir=$1 out epoch=$3 stage name
    out=$(realpath -m "$2")
    stage=$(mktemp -d)
    while IFS= read -r name; do
        [[ -f $dir/$name ]] || continue
        cp -L "$dir/$name" "$stage/$name"
        chmod 0644 "$stage/$name"
        touch -d "@$epoch" "$stage/$name"
    done < <(cd "$dir" && ls -1A | LC_ALL=C sort)
    rm -f "$out.tmp"
    (cd "$stage" && ls -1A | LC_ALL=C sort | TZ=UTC zip -X -D -q -@ "$out.tmp") \
        || { rm -rf "$stage"; echo "package: zip failed for $dir" >&2; return 1; }
    rm -rf "$stage"
    mv "$out.tmp" "$out"
    (cd "$(dirname "$out")" && sha256sum "$(basename "$out")") >"$out.sha256"
}
