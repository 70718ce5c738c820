//! Build script for the pmupcw driver.
//!
//! Counters (every target): compiles manifests/pmupcw.man with crates/counter-manifest (CTRPP's job)
//! into `OUT_DIR/counters.rs`, which src/counters.rs includes: the counter data structs, PCW descriptor
//! tables, ids, names and each counterset's typed binding. Beside it goes `OUT_DIR/pcw_contract.rs`,
//! the items that code names as `crate::pcw::...`. A manifest error fails the build as
//! `manifests/pmupcw.man:LINE:COLUMN: reason`.
//!
//! For the driver target (`x86_64-pc-windows-msvc`) it also
//! * writes the manifest's string table and the VERSIONINFO to `OUT_DIR/pmupcw.rc` and compiles it into
//!   `OUT_DIR/pmupcw.res` (llvm-rc, or rc.exe with the `wdk` feature on Windows), which the link takes as
//!   an input, so that lodctr finds the counter names in pmupcw.sys;
//! * configures a kernel-mode link:
//!   * default mode (no WDK, any host): with the same linker flags wdk-build would pass;
//!   * `wdk` feature (Windows host with the WDK): through `wdk_build::configure_wdk_binary_build`, which
//!     also finds the WDK's libraries and sets the `driver_model__driver_type` cfg the wdk crates need.
//!
//! Both modes add the flags of [`IMAGE_LAYOUT_FLAGS`] and the overflow handler's section flag, spelled
//! for the linker that runs ([`resident_section_flag`]). Host builds (unit tests) need only counters.rs.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use counter_manifest::{RcTool, VersionInfo};

/// The counter manifest, relative to the package root (errors name it so).
const MANIFEST: &str = "manifests/pmupcw.man";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let driver = target_os == "windows" && target_env == "msvc";
    if let Err(message) = generate_counters(driver) {
        // Each line is one error of cargo's own output ("error: pmupcw@0.1.0: manifests/...:L:C: ..."),
        // and a build script that logged an error fails the build.
        for line in message.lines() {
            println!("cargo::error={line}");
        }
        return;
    }
    if !driver {
        return;
    }
    configure_kernel_link();
    for flag in IMAGE_LAYOUT_FLAGS {
        println!("cargo::rustc-cdylib-link-arg={flag}");
    }
    // Cargo tells a build script the linker it resolved for the target (.cargo/config.toml's rust-lld,
    // or Makefile.toml's link.exe in the WDK flow); rustc's default for this target is link.exe. Cargo
    // does not rerun a build script for another linker by itself: the WDK flow's override is watched.
    println!("cargo::rerun-if-env-changed=CARGO_TARGET_X86_64_PC_WINDOWS_MSVC_LINKER");
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "link.exe".to_owned());
    println!("cargo::rustc-cdylib-link-arg={}", resident_section_flag(&linker));
}

/// Compiles the manifest into OUT_DIR/counters.rs and, for the driver, into OUT_DIR/pmupcw.res, which
/// it hands to the linker.
fn generate_counters(driver: bool) -> Result<(), String> {
    println!("cargo::rerun-if-changed={MANIFEST}");
    let package_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    let out_dir = PathBuf::from(env("OUT_DIR")?);
    let text =
        fs::read_to_string(package_dir.join(MANIFEST)).map_err(|error| format!("{MANIFEST}: {error}"))?;
    let version_info = VersionInfo {
        version: driver_version()?,
        company: "pmupcw developers".to_owned(),
        description: "pmupcw hardware performance counters driver".to_owned(),
        product: "pmupcw".to_owned(),
        copyright: "MIT OR Apache-2.0".to_owned(),
    };
    let generated =
        counter_manifest::compile(MANIFEST, &text, Some(&version_info)).map_err(|error| error.to_string())?;
    write_if_changed(&out_dir.join("counters.rs"), &generated.rust)?;
    // The crate::pcw items the generated code names (counter-manifest's contract): src/counters.rs
    // includes them beside the generated modules.
    write_if_changed(&out_dir.join("pcw_contract.rs"), counter_manifest::PCW_CONTRACT)?;
    if !driver {
        return Ok(());
    }

    let rc = out_dir.join("pmupcw.rc");
    let res = out_dir.join("pmupcw.res");
    write_if_changed(&rc, &generated.rc)?;
    let tool = resource_compiler()?;
    counter_manifest::compile_rc(&tool, &rc, &res).map_err(|error| {
        format!(
            "{error}\nThe resource compiler is llvm-rc (scripts/linux/setup.sh installs it from Debian's llvm \
             package; LLVM_RC overrides it), or rc.exe with the `wdk` feature on Windows."
        )
    })?;
    // lld-link and link.exe take a .res among their inputs and turn it into the image's .rsrc section.
    println!("cargo::rustc-cdylib-link-arg={}", res.display());
    Ok(())
}

/// The resource compiler: `LLVM_RC` if set; with the `wdk` feature on Windows, the WDK's rc.exe from
/// PATH (the WDK developer prompt has it); else the first llvm-rc that runs.
fn resource_compiler() -> Result<RcTool, String> {
    println!("cargo::rerun-if-env-changed=LLVM_RC");
    let llvm_rc = std::env::var_os("LLVM_RC");
    if cfg!(all(feature = "wdk", windows)) && llvm_rc.is_none() {
        return Ok(RcTool::Microsoft(OsString::from("rc.exe")));
    }
    counter_manifest::find_llvm_rc(llvm_rc).ok_or_else(|| {
        format!(
            "no resource compiler for the counter names: none of {} runs. Run scripts/linux/setup.sh (it \
             installs Debian's llvm package, which has llvm-rc), or set LLVM_RC to an llvm-rc program.",
            counter_manifest::LLVM_RC_NAMES.join(", ")
        )
    })
}

/// The version VERSIONINFO gives the driver: the Cargo version, with the package's build number as its
/// fourth part when `PMUPCW_BUILD_NUMBER` is set (scripts/linux/package.sh sets it to the number it
/// stamps into the INF's DriverVer, so that the image and the INF say the same version), else 0.
fn driver_version() -> Result<String, String> {
    println!("cargo::rerun-if-env-changed=PMUPCW_BUILD_NUMBER");
    let Ok(build) = std::env::var("PMUPCW_BUILD_NUMBER") else { return env("CARGO_PKG_VERSION") };
    // Each part of a DriverVer version must be below 65535 (INF DriverVer directive).
    if !build.parse::<u16>().is_ok_and(|number| number < u16::MAX) {
        return Err(format!("PMUPCW_BUILD_NUMBER `{build}` is not a number from 0 to 65534"));
    }
    let [major, minor, patch] =
        ["CARGO_PKG_VERSION_MAJOR", "CARGO_PKG_VERSION_MINOR", "CARGO_PKG_VERSION_PATCH"].map(env);
    Ok(format!("{}.{}.{}.{build}", major?, minor?, patch?))
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|error| format!("environment variable {name}: {error}"))
}

/// Writes `contents` unless the file already holds them, so that an unchanged manifest leaves the
/// generated files' timestamps alone.
fn write_if_changed(path: &Path, contents: &str) -> Result<(), String> {
    if fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return Ok(());
    }
    fs::write(path, contents).map_err(|error| format!("{}: {error}", path.display()))
}

/// The flags wdk-build 0.6 emits for a WDM driver (windows-drivers-rs/crates/wdk-build/src/lib.rs,
/// `Config::configure_binary_build`), minus its `/MAP` outputs and the `/IGNORE` of link.exe-only
/// warnings, which lld-link does not produce.
#[cfg(not(feature = "wdk"))]
fn configure_kernel_link() {
    const WDM_DRIVER_FLAGS: &[&str] = &[
        "/DRIVER",
        "/NODEFAULTLIB", // no CRT: the kernel provides the runtime (src/kernel/build_mode.rs)
        "/SUBSYSTEM:NATIVE,10.00", // not a Win32 program; Windows 10 is the minimum
        "/KERNEL",
        "/ENTRY:DriverEntry",
        "/NXCOMPAT",
        "/DYNAMICBASE",
        "/OPT:REF,ICF",
        "/INTEGRITYCHECK", // FORCE_INTEGRITY: the kernel refuses the image unless its signature verifies
        "/MANIFEST:NO",
    ];
    for flag in WDM_DRIVER_FLAGS {
        println!("cargo::rustc-cdylib-link-arg={flag}");
    }
}

#[cfg(all(feature = "wdk", windows))]
fn configure_kernel_link() {
    if let Err(error) = wdk_build::configure_wdk_binary_build() {
        panic!("wdk-build could not configure the driver link: {error}");
    }
}

#[cfg(all(feature = "wdk", not(windows)))]
fn configure_kernel_link() {
    panic!(
        "the `wdk` feature builds with the Windows Driver Kit and needs a Windows host; \
         on this host build without it (the default mode needs no WDK)"
    );
}

/// Flags both modes add to the kernel link; link.exe and lld-link read each the same way.
const IMAGE_LAYOUT_FLAGS: &[&str] = &[
    // The PE checksum: "The operating system requires the Checksum for device drivers"
    // (https://learn.microsoft.com/cpp/build/reference/release-set-the-checksum). link.exe sets it by
    // default under /SUBSYSTEM:NATIVE; lld-link (LLD 22) writes it only when given /RELEASE and leaves
    // the field 0 otherwise. Signing rewrites the checksum anyway (osslsigncode stores the new file's),
    // so /RELEASE is what makes the unsigned linker output valid too (tests/binary_checks.rs checks both).
    "/RELEASE",
    "/PDBALTPATH:%_PDB%", // record only the PDB's file name, not the build machine's path
    "/SECTION:INIT,ERD",  // DriverEntry's section: execute, read, discardable (never writable)
    // CET shadow stack compatible: a debug directory entry of type IMAGE_DEBUG_TYPE_EX_DLLCHARACTERISTICS
    // with IMAGE_DLLCHARACTERISTICS_EX_CET_COMPAT (https://learn.microsoft.com/cpp/build/reference/cetcompat,
    // https://learn.microsoft.com/windows/win32/debug/pe-format#extended-dll-characteristics), without
    // which Kernel-mode Hardware-enforced Stack Protection counts the driver as incompatible
    // (https://learn.microsoft.com/windows-server/security/kernel-mode-hardware-stack-protection). The
    // driver never rewrites a return address: panics bug-check, nothing unwinds, no longjmp.
    "/CETCOMPAT",
];

/// The flag that makes `.pmi`, the overflow handler's section (src/kernel/pmi.rs), execute, read and
/// IMAGE_SCN_MEM_NOT_PAGED, for `linker` (a path or name: link.exe's syntax if its stem is `link`,
/// else lld-link's, which rust-lld speaks). The linkers read /SECTION's P attribute in opposite senses
/// (https://learn.microsoft.com/cpp/build/reference/section-specify-section-attributes): for link.exe,
/// P is "Pageable", one of the two attributes "used in the negative sense", so `!P` is what sets
/// IMAGE_SCN_MEM_NOT_PAGED and `P` leaves the section pageable; lld-link sets IMAGE_SCN_MEM_NOT_PAGED
/// for `P` and rejects `!` ("/section: invalid argument"). The binary checks require the flag
/// (driver-image-checks' `resident_code_section`), besides a name the kernel does not page (not PAGE*).
fn resident_section_flag(linker: &str) -> &'static str {
    // Either separator: a Windows path must be read right on any host.
    let file = linker.rsplit(['/', '\\']).next().unwrap_or(linker);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    if stem.eq_ignore_ascii_case("link") { "/SECTION:.pmi,ER!P" } else { "/SECTION:.pmi,ERP" }
}
