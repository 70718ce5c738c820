//! driver-catalog --inf <pmupcw.inf> [--files <file>...] --out <unsigned.cat> [--time <unix seconds>]
//!   [--catalog-version 2|1] [--os _v100_X64] [--os-attr 2:10.0]
//!
//! Writes the unsigned catalog for the package of <inf>: the INF plus the files its `[SourceDisksFiles]`
//! name (found beside it), or exactly the INF plus the --files given. Version 2 (default) lists SHA-256
//! hashes (plus SHA-1 lookup entries), version 1 SHA-1 hashes only. thisUpdate is --time, else
//! SOURCE_DATE_EPOCH, else now. Sign the output with
//! `osslsigncode sign -certs CERT -key KEY -h sha256 -in <unsigned.cat> -out <pkg>/pmupcw.cat`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use driver_catalog::{
    CatalogOptions, CatalogVersion, build_unsigned_catalog, members_for, package_files, read_inf,
};

const USAGE: &str = "usage: driver-catalog --inf <file.inf> [--files <file>...] --out <catalog.cat> \
                     [--time <unix seconds>] [--catalog-version 2|1] [--os <OS attribute>] \
                     [--os-attr <OSAttr>]";

fn run(args: Vec<String>) -> Result<(), String> {
    let mut inf_path: Option<PathBuf> = None;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut out: Option<PathBuf> = None;
    let mut options = CatalogOptions::default();
    let mut time: Option<u64> = None;
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--inf" => inf_path = Some(value()?.into()),
            "--out" => out = Some(value()?.into()),
            "--time" => time = Some(value()?.parse().map_err(|e| format!("--time: {e}"))?),
            "--os" => options.os = value()?,
            "--catalog-version" => {
                options.version = match value()?.as_str() {
                    "1" => CatalogVersion::V1,
                    "2" => CatalogVersion::V2,
                    other => return Err(format!("--catalog-version {other}: 1 or 2")),
                }
            }
            "--os-attr" => options.os_attr = value()?,
            "--files" | "--file" => {
                files.push(value()?.into());
                while let Some(next) = args.peek().filter(|a| !a.starts_with("--")) {
                    files.push(next.into());
                    args.next();
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let inf_path = inf_path.ok_or_else(|| format!("--inf is required\n{USAGE}"))?;
    let out = out.ok_or_else(|| format!("--out is required\n{USAGE}"))?;
    let catalog_name = read_inf(&inf_path)?.catalog_file();
    let out_name = out.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(name) = &catalog_name
        && !out_name.eq_ignore_ascii_case(name)
    {
        eprintln!("driver-catalog: note: the INF names CatalogFile = {name}; writing {}", out.display());
    }
    let files = if files.is_empty() {
        package_files(&inf_path)?
    } else {
        let mut all = vec![inf_path.clone()];
        all.extend(files);
        all
    };
    options.this_update = match time {
        Some(t) => t,
        None => match std::env::var("SOURCE_DATE_EPOCH") {
            Ok(v) => v.trim().parse().map_err(|e| format!("SOURCE_DATE_EPOCH: {e}"))?,
            Err(_) => SystemTime::now().duration_since(UNIX_EPOCH).map_err(|e| e.to_string())?.as_secs(),
        },
    };
    let members = members_for(&files)?;
    let catalog = build_unsigned_catalog(&members, &options).map_err(|e| e.to_string())?;
    std::fs::write(&out, &catalog).map_err(|e| format!("{}: {e}", out.display()))?;
    for member in &members {
        let sha256: String = member.sha256.iter().map(|b| format!("{b:02X}")).collect();
        println!("driver-catalog: {sha256} {:?} {}", member.kind, member.file_name);
    }
    println!(
        "driver-catalog: wrote {} ({} bytes, {} members, unsigned)",
        out.display(),
        catalog.len(),
        members.len()
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("driver-catalog: {message}");
            ExitCode::FAILURE
        }
    }
}
