//! Build script for the pmupcw driver.
//!
//! For the driver target it configures a kernel-mode link: in the default mode with the linker flags
//! the WDK would pass, in the `wdk` mode through wdk-build. Host builds (unit tests) need nothing.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os != "windows" || target_env != "msvc" {
        return;
    }
    for flag in KERNEL_LINK_FLAGS {
        println!("cargo::rustc-cdylib-link-arg={flag}");
    }
}

/// lld-link / link.exe flags for a kernel-mode driver image.
const KERNEL_LINK_FLAGS: &[&str] = &[
    "/DRIVER",                 // kernel-mode driver image
    "/SUBSYSTEM:NATIVE,10.00", // not a Win32 program; Windows 10 is the minimum
    "/ENTRY:DriverEntry",
    "/NODEFAULTLIB", // no CRT: the kernel provides the runtime (see src/kernel/build_mode.rs)
    "/INTEGRITYCHECK", // FORCE_INTEGRITY: the kernel refuses the image unless its signature verifies
    "/NXCOMPAT",
    "/DYNAMICBASE",
    "/OPT:REF,ICF",
    "/MANIFEST:NO",
    "/RELEASE", // write the PE checksum, which the kernel loader verifies for drivers
    "/DEBUG",   // emit pmupcw.pdb
    "/PDBALTPATH:%_PDB%", // record only the PDB's file name, not the build machine's path
    "/SECTION:INIT,ERD", // DriverEntry's section: execute, read, discardable
];
