//! The harness cross-compiles on Linux for x86_64-pc-windows-gnu (mingw-w64 from Debian) into a 64-bit
//! Windows console executable that imports PDH and the service control manager.
//!
//! It builds with its own target directory (`target/windows-gnu`): the outer `cargo test` holds the lock
//! on the workspace's target directory while tests run, so a nested build there would wait forever.
//! It never skips: a missing linker or Rust target fails with the command that installs them.

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "x86_64-pc-windows-gnu";
const LINKER: &str = "x86_64-w64-mingw32-gcc";
const SETUP: &str = "run `bash scripts/linux/setup.sh` (it installs Debian's mingw-w64 and `rustup target add x86_64-pc-windows-gnu`)";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn require_linker() {
    let found = Command::new(LINKER).arg("--version").output().map(|o| o.status.success()).unwrap_or(false);
    assert!(found, "{LINKER} is not on PATH: {SETUP}");
}

fn require_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(rustc)
        .current_dir(workspace())
        .args(["--print", "sysroot"])
        .output()
        .expect("run rustc --print sysroot");
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    let std = Path::new(&sysroot).join("lib/rustlib").join(TARGET).join("lib");
    assert!(std.is_dir(), "the Rust standard library for {TARGET} is missing ({}): {SETUP}", std.display());
}

fn build() -> PathBuf {
    let root = workspace();
    let target_dir = root.join("target/windows-gnu");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target_dir)
        // The outer build's settings for the host must not leak into the nested build.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .args(["build", "--locked", "--release", "--target", TARGET, "-p", "pdh-harness"])
        .output()
        .expect("run cargo build");
    assert!(
        output.status.success(),
        "cargo build --locked --release --target {TARGET} -p pdh-harness failed ({}); if the linker or target is \
         missing, {SETUP}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    target_dir.join(TARGET).join("release/pdh-harness.exe")
}

#[test]
fn cross_compiles_to_a_windows_console_executable_importing_pdh_and_advapi32() {
    require_linker();
    require_target();
    let exe = build();
    let bytes = std::fs::read(&exe).unwrap_or_else(|e| panic!("read {}: {e}", exe.display()));
    let pe =
        goblin::pe::PE::parse(&bytes).unwrap_or_else(|e| panic!("{} is not a PE image: {e}", exe.display()));

    assert!(pe.is_64, "PE32+ (64-bit optional header)");
    assert!(!pe.is_lib, "an executable, not a DLL");
    assert_eq!(pe.header.coff_header.machine, goblin::pe::header::COFF_MACHINE_X86_64, "AMD64");
    let characteristics = pe.header.coff_header.characteristics;
    assert!(
        characteristics & goblin::pe::characteristic::IMAGE_FILE_EXECUTABLE_IMAGE != 0,
        "executable image"
    );
    let optional = pe.header.optional_header.expect("an optional header");
    let subsystem = optional.windows_fields.subsystem;
    assert!(
        subsystem == goblin::pe::subsystem::IMAGE_SUBSYSTEM_WINDOWS_CUI
            || subsystem == goblin::pe::subsystem::IMAGE_SUBSYSTEM_WINDOWS_GUI,
        "console or GUI subsystem, got {subsystem}"
    );
    assert_eq!(
        subsystem,
        goblin::pe::subsystem::IMAGE_SUBSYSTEM_WINDOWS_CUI,
        "the harness is a console program"
    );

    let libraries: Vec<String> = pe.libraries.iter().map(|l| l.to_ascii_lowercase()).collect();
    for dll in ["pdh.dll", "advapi32.dll"] {
        assert!(
            libraries.iter().any(|l| l == dll),
            "{} imports {dll}; imports: {libraries:?}",
            exe.display()
        );
    }
    let imported = |name: &str| pe.imports.iter().any(|i| i.name == name);
    for function in [
        "PdhOpenQueryW",
        "PdhAddEnglishCounterW",
        "PdhExpandWildCardPathW",
        "PdhCollectQueryData",
        "PdhGetRawCounterArrayW",
        "PdhGetFormattedCounterArrayW",
        "OpenSCManagerW",
        "OpenServiceW",
        "ControlService",
        "StartServiceW",
        "QueryServiceStatus",
    ] {
        assert!(imported(function), "{} imports {function}", exe.display());
    }
}
