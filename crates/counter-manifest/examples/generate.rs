//! Prints what the build generates from a manifest: `cargo run -p counter-manifest --example generate
//! -- manifests/pmupcw.man [rs|rc]`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: generate MANIFEST [rs|rc]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path}: {error}"));
    match counter_manifest::compile(path, &text, None) {
        Ok(generated) if args.get(1).map(String::as_str) == Some("rc") => print!("{}", generated.rc),
        Ok(generated) => print!("{}", generated.rust),
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    }
}
