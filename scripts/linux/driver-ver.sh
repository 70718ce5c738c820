# The DriverVer of a pmupcw package, `mm/dd/yyyy,major.minor.patch.build` (INF DriverVer directive,
# https://learn.microsoft.com/windows-hardware/drivers/install/inf-driverver-directive). Sourced by
# package.sh, which stamps it into pmupcw.inf and gives the build number to the driver's VERSIONINFO;
# tests/deployment/upgrade.rs runs it at chosen times.
#
# Both parts come from one time, the package's time: SOURCE_DATE_EPOCH where set, else the time of
# the source (source_epoch below), never the clock, so that building an unchanged source again gives
# the same DriverVer and the same image and cargo has nothing to rebuild. The date is that time's UTC
# day, the build number its UTC seconds since that day's midnight halved (0 to 43199). A package made
# from a source changed 2 s or more later thus has a later date or, on the same date, a higher version,
# and Windows compares DriverVer dates before versions, so it outranks the packages made before it.
# Limits:
#   * each of w.x.y.z must be below 65535, so the build number counts 2-second steps of one day: a
#     count since a fixed epoch would pass 65534 within 46 days even in minutes;
#   * the build number alone does not order packages of different days (the date does);
#   * two sources changed within the same 2 s get the same DriverVer, and so do two builds with the
#     same SOURCE_DATE_EPOCH, which is meant to reproduce a package exactly;
#   * an uncommitted change counts by its file's modification time, so a machine whose clock is behind
#     makes packages that do not outrank ones made elsewhere, and touching a file counts as a change.

# The time of the source in the git work tree DIR, in seconds since 1970-01-01 UTC: its last commit's
# committer time, or, when files differ from that commit (modified, added or untracked and not
# ignored: `git status`), the newest of their modification times if later; a deleted file counts by
# its folder's. Fails, saying so, outside a git work tree: set SOURCE_DATE_EPOCH there.
source_epoch() {
    local dir=$1 epoch entry path time
    epoch=$(git -C "$dir" log -1 --format=%ct 2>/dev/null) && [[ $epoch =~ ^[0-9]+$ ]] || {
        echo "source_epoch: cannot read the last commit's time in $dir" \
            "(git: $(git -C "$dir" log -1 --format=%ct 2>&1 >/dev/null | tr '\n' ' ')):" \
            "outside a git work tree, set SOURCE_DATE_EPOCH (seconds since 1970) to the source's time" >&2
        return 1
    }
    while IFS= read -r -d '' entry; do
        path=$dir/${entry:3}
        # A rename or copy is followed by its original path, which does not count.
        if [[ ${entry:0:1} == [RC] ]]; then IFS= read -r -d '' _; fi
        while [[ ! -e $path && $path == */* ]]; do path=${path%/*}; done
        [[ -e $path ]] || continue
        time=$(stat -c %Y "$path")
        if ((time > epoch)); then epoch=$time; fi
    done < <(git -C "$dir" status --porcelain=v1 -z --untracked-files=all)
    echo "$epoch"
}

# The time of a package of the source in DIR: SOURCE_DATE_EPOCH when set (it must be a number of
# seconds since 1970), else source_epoch DIR. package.sh stamps it; `cargo make lint` builds the driver
# with the same build number, so that its clippy run leaves package.sh's build fresh.
package_epoch() {
    if [[ -n ${SOURCE_DATE_EPOCH:-} ]]; then
        [[ $SOURCE_DATE_EPOCH =~ ^[0-9]+$ ]] || {
            echo "package_epoch: SOURCE_DATE_EPOCH '$SOURCE_DATE_EPOCH' is not a number of seconds since 1970" >&2
            return 1
        }
        echo "$SOURCE_DATE_EPOCH"
    else
        source_epoch "$1"
    fi
}

# The build number of a package built at EPOCH (seconds since 1970-01-01 UTC).
driver_build_number() {
    echo $(($1 % 86400 / 2))
}

# The DriverVer of a package of Cargo version VERSION (x.y.z; a pre-release or build suffix is
# dropped) built at EPOCH.
driver_ver() {
    local version=${1%%[-+]*} epoch=$2 part
    [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
        || { echo "driver_ver: cannot make a DriverVer version from '$1'" >&2; return 1; }
    for part in ${version//./ }; do
        ((10#$part < 65535)) || { echo "driver_ver: $part in '$1' is not below 65535" >&2; return 1; }
    done
    printf '%s,%s.%s\n' "$(date -u -d "@$epoch" +%m/%d/%Y)" "$version" "$(driver_build_number "$epoch")"
}
