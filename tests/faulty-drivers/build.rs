//! The kernel-mode link of every faulty driver: the flags /work/main/build.rs passes for pmupcw.sys in
//! its default (no WDK) mode, so that these images are built like the real one. rust-lld and
//! `+crt-static` come from the repository's .cargo/config.toml (cargo finds it from this folder).

/// build.rs's WDM_DRIVER_FLAGS (wdk-build's WDM flags).
const WDM_DRIVER_FLAGS: &[&str] = &[
    "/DRIVER",
    "/NODEFAULTLIB",
    "/SUBSYSTEM:NATIVE,10.00",
    "/KERNEL",
    "/ENTRY:DriverEntry",
    "/NXCOMPAT",
    "/DYNAMICBASE",
    "/OPT:REF,ICF",
    "/INTEGRITYCHECK",
    "/MANIFEST:NO",
];

/// build.rs's IMAGE_LAYOUT_FLAGS (its `.pmi` flag is pmupcw's own).
const IMAGE_LAYOUT_FLAGS: &[&str] = &["/RELEASE", "/PDBALTPATH:%_PDB%", "/SECTION:INIT,ERD", "/CETCOMPAT"];

fn main() {
    println!("cargo::rerun-if-changed=../build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let target_env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if target_os != "windows" || target_env != "msvc" {
        println!("cargo::error=the faulty drivers build only for x86_64-pc-windows-msvc");
        return;
    }
    for flag in WDM_DRIVER_FLAGS.iter().chain(IMAGE_LAYOUT_FLAGS) {
        println!("cargo::rustc-cdylib-link-arg={flag}");
    }
}
