//! Prints what counter-manifest generates from a manifest: the Rust source a driver includes, the `.rc`
//! script with the string table, and a summary table of countersets, counters and string ids.
//!
//! ```text
//! cargo run -p counter-manifest --example generate [-- MANIFEST [rs|rc|summary]]
//! ```
//!
//! Without MANIFEST it reads the crate's example, examples/geometric_waves.man; without a part it
//! prints all three. A manifest error prints as `file:line:column: reason` and exits with status 1.

use std::process::ExitCode;

/// The crate's example manifest, as messages and generated headers name it.
const EXAMPLE: &str = "examples/geometric_waves.man";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (path, part) = match args.as_slice() {
        [] => (EXAMPLE.to_owned(), None),
        [path] => (path.clone(), None),
        [path, part] if ["rs", "rc", "summary"].contains(&part.as_str()) => {
            (path.clone(), Some(part.as_str()))
        }
        _ => {
            eprintln!("usage: generate [MANIFEST [rs|rc|summary]]");
            return ExitCode::from(2);
        }
    };
    // The example is found from the crate, wherever cargo runs it from.
    let file =
        if path == EXAMPLE { format!("{}/{EXAMPLE}", env!("CARGO_MANIFEST_DIR")) } else { path.clone() };
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("{file}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let generated = match counter_manifest::compile(&path, &text, None) {
        Ok(generated) => generated,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let summary = counter_manifest::summary(&generated.manifest);
    match part {
        Some("rs") => print!("{}", generated.rust),
        Some("rc") => print!("{}", generated.rc),
        Some(_) => print!("{summary}"),
        None => {
            println!("==== Rust (OUT_DIR/counters.rs) ====\n\n{}", generated.rust);
            println!(
                "==== Resource script (the string table, for rc.exe or llvm-rc) ====\n\n{}",
                generated.rc
            );
            print!("==== Summary ====\n\n{summary}");
        }
    }
    ExitCode::SUCCESS
}
