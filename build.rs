//! Build script for the pmupcw driver.
//!
//! For the driver target (`x86_64-pc-windows-msvc`) it configures a kernel-mode link:
//! * default mode (no WDK, any host): with the same linker flags wdk-build would pass;
//! * `wdk` feature (Windows host with the WDK): through `wdk_build::configure_wdk_binary_build`, which
//!   also finds the WDK's libraries and sets the `driver_model__driver_type` cfg the wdk crates need.
//!
//! Both modes add the flags of [`IMAGE_LAYOUT_FLAGS`]. Host builds (unit tests) need nothing.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os != "windows" || target_env != "msvc" {
        return;
    }
    configure_kernel_link();
    for flag in IMAGE_LAYOUT_FLAGS {
        println!("cargo::rustc-cdylib-link-arg={flag}");
    }
}

/// The flags wdk-build 0.6 emits for a WDM driver (crates/wdk-build/src/lib.rs,
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

/// Flags both modes add to the kernel link.
const IMAGE_LAYOUT_FLAGS: &[&str] = &[
    "/RELEASE",           // write the PE checksum, which the kernel loader verifies for drivers
    "/PDBALTPATH:%_PDB%", // record only the PDB's file name, not the build machine's path
    "/SECTION:INIT,ERD",  // DriverEntry's section: execute, read, discardable (never writable)
];
