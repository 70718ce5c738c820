//! Static cost of the PMU overflow handler: the `.pmi` section of the built driver image, decoded with
//! iced-x86 (driver-image-checks' `handler_cost`). The handler runs at PROFILE_LEVEL on every counter
//! overflow, once per call plus once per set bit of the overflow mask; the table shows its instruction
//! counts, what it calls (nothing, it must not) and the instructions one call runs for 1, 2, 4 and 8
//! overflowed counters, then the disassembly with the per-bit loop marked `|`.
//!
//! Counts, not timings: the handler cannot run outside the kernel. The image is
//! `$PMUPCW_PACKAGE_DIR/pmupcw.sys` (default target/package/pmupcw/pmupcw.sys), built by
//! `cargo make package`.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process;

use driver_image_checks::{handler_cost, section_listing};

/// The section build.rs makes resident for the overflow handler (`resident_section_flag`).
const SECTION: &str = ".pmi";

fn image_path() -> PathBuf {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    env::var_os("PMUPCW_PACKAGE_DIR")
        .map_or_else(|| repository.join("target/package/pmupcw"), PathBuf::from)
        .join("pmupcw.sys")
}

fn fail(message: String) -> ! {
    eprintln!("handler_cost: {message}");
    process::exit(1);
}

fn main() {
    // `cargo bench` passes `--bench`; a filter or other arguments have nothing to select here.
    let path = image_path();
    let image = fs::read(&path).unwrap_or_else(|error| {
        fail(format!(
            "cannot read {}: {error}; run `cargo make package` first (it builds, signs and packages the \
             driver)",
            path.display()
        ))
    });
    let cost =
        handler_cost(&image, SECTION).unwrap_or_else(|error| fail(format!("{}: {error}", path.display())));
    let listing =
        section_listing(&image, SECTION).unwrap_or_else(|error| fail(format!("{}: {error}", path.display())));

    println!("PMU overflow handler: section {SECTION} of {}", path.display());
    println!();
    let rows: [(&str, String); 8] = [
        ("section size (virtual, bytes)", cost.section_size.to_string()),
        ("instructions (without padding)", cost.instructions.to_string()),
        ("fixed instructions (outside the loop)", cost.fixed.to_string()),
        ("instructions per set bit (loop body)", cost.loop_body.to_string()),
        ("calls", cost.calls.to_string()),
        ("indirect jumps", cost.indirect_jumps.to_string()),
        ("locked read-modify-writes", cost.locked.to_string()),
        ("returns", cost.returns.to_string()),
    ];
    for (label, value) in rows {
        println!("{label:<40} {value:>6}");
    }
    println!();
    println!("{:<12} {:>14}", "set bits", "instructions");
    for bits in [1, 2, 4, 8] {
        println!("{bits:<12} {:>14}", cost.estimate(bits));
    }
    println!();
    println!("{SECTION} disassembly (| marks the per-bit loop):");
    print!("{listing}");
}
