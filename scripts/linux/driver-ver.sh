# The DriverVer of a pmupcw package, `mm/dd/yyyy,major.minor.patch.build` (INF DriverVer directive,
# https://learn.microsoft.com/windows-hardware/drivers/install/inf-driverver-directive). Sourced by
# package.sh, which stamps it into pmupcw.inf and gives the build number to the driver's VERSIONINFO;
# tests/deployment/upgrade.rs runs it at chosen times.
#
# Both parts come from one time, the package's build time: the date is its UTC day, the build number
# the UTC seconds since that day's midnight halved (0 to 43199). A package built 2 s or more later thus
# has a later date or, on the same date, a higher version, and Windows compares DriverVer dates before
# versions, so every rebuild outranks the packages built before it, on every machine whose clock is
# right. Limits:
#   * each of w.x.y.z must be below 65535, so the build number counts 2-second steps of one day: a
#     count since a fixed epoch would pass 65534 within 46 days even in minutes;
#   * the build number alone does not order packages of different days (the date does);
#   * two builds in the same 2 s get the same DriverVer, and so do two builds with the same
#     SOURCE_DATE_EPOCH, which is meant to reproduce a package exactly;
#   * a build machine whose clock is behind makes packages that do not outrank ones built elsewhere.

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
