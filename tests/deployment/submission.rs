//! The attestation-submission cabinet `cargo make package` makes beside the package
//! (target/package/pmupcw-attestation.cab, scripts/linux/package.sh), read with the `cab` crate.
//!
//! What Partner Center takes ("Attestation sign Windows drivers", "Create the CAB file":
//! https://learn.microsoft.com/windows-hardware/drivers/dashboard/code-signing-attestation): each
//! driver package in a folder of its own, no file at the cabinet's root; the driver, its INF, the
//! symbols (.pdb) and the catalog. The folder must hold every file the INF installs, and they must be
//! the package's: the same INF, manifest and symbols, and the same image as the test-signed
//! pmupcw.sys (the same Authenticode image hash) without its test signature, which means nothing
//! outside a test machine.
//!
//! The checker is shown to fail on cabinets built here with the `cab` crate's writer: a file at the
//! root, a missing .pdb, an image that is not the package's, and a test-signed image.

use std::io::{Cursor, Read, Write};

use sha2::Sha256;

use super::*;

const FOLDER: &str = "pmupcw";
/// The cabinet's files besides those the INF installs: the INF, its catalog and the symbols.
const ALSO: &[&str] = &["pmupcw.inf", "pmupcw.cat", "pmupcw.pdb"];

fn cabinet_path() -> PathBuf {
    repository().join("target/package/pmupcw-attestation.cab")
}

/// Every file of the cabinet `bytes`: its stored name (`folder\file`) and contents.
fn cabinet_files(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut cabinet =
        cab::Cabinet::new(Cursor::new(bytes)).map_err(|error| format!("not a cabinet: {error}"))?;
    let names: Vec<String> = cabinet
        .folder_entries()
        .flat_map(|folder| folder.file_entries().map(|file| file.name().to_owned()))
        .collect();
    let mut files = Vec::new();
    for name in names {
        let mut contents = Vec::new();
        cabinet
            .read_file(&name)
            .and_then(|mut reader| reader.read_to_end(&mut contents))
            .map_err(|error| format!("{name}: {error}"))?;
        files.push((name, contents));
    }
    Ok(files)
}

fn authenticode(image: &[u8]) -> Result<Vec<u8>, String> {
    driver_catalog::pe::authenticode_digest::<Sha256>(image).map_err(|error| error.to_string())
}

/// What is wrong with the cabinet `bytes` as the attestation submission of the package in `dir`.
fn submission_problems(bytes: &[u8], dir: &Path) -> Vec<String> {
    let files = match cabinet_files(bytes) {
        Ok(files) => files,
        Err(error) => return vec![error],
    };
    let mut problems = Vec::new();
    let mut in_folder = BTreeSet::new();
    for (name, _) in &files {
        match name.split_once('\\') {
            Some((folder, file)) if folder == FOLDER && !file.contains('\\') => {
                in_folder.insert(file.to_ascii_lowercase());
            }
            _ => problems.push(format!("{name} is not a file of the folder {FOLDER}\\")),
        }
    }
    let inf = read_text(&dir.join("pmupcw.inf"));
    let installs = Inf::parse(&inf).map(|inf| inf.source_disks_files()).unwrap_or_default();
    let expected: BTreeSet<String> = installs
        .iter()
        .map(|file| file.to_ascii_lowercase())
        .chain(ALSO.iter().map(|f| (*f).to_owned()))
        .collect();
    if in_folder != expected {
        problems.push(format!("{FOLDER}\\ holds {in_folder:?}, not {expected:?}"));
    }
    for (name, contents) in &files {
        let file = name.rsplit('\\').next().unwrap_or(name).to_ascii_lowercase();
        let same = || fs::read(dir.join(&file)).ok().as_deref() == Some(contents.as_slice());
        match file.as_str() {
            "pmupcw.sys" => problems.extend(image_problems(contents, dir)),
            "pmupcw.inf" | "pmupcw.man" | "pmupcw.pdb" if !same() => {
                problems.push(format!("{name} is not the package's {file}"));
            }
            _ => {}
        }
    }
    problems
}

/// The submitted image must be the package's pmupcw.sys without a signature.
fn image_problems(image: &[u8], dir: &Path) -> Vec<String> {
    let packaged = fs::read(dir.join(DRIVER_FILE)).unwrap_or_default();
    let mut problems = Vec::new();
    match (authenticode(image), authenticode(&packaged)) {
        (Ok(submitted), Ok(package)) if submitted == package => {}
        (Ok(_), Ok(_)) => {
            problems.push("pmupcw.sys is not the package's image (Authenticode hashes differ)".into())
        }
        (Err(error), _) | (_, Err(error)) => problems.push(format!("pmupcw.sys: {error}")),
    }
    if driver_catalog::pe::embedded_signature_digest(image).is_ok() {
        problems.push("pmupcw.sys carries a signature (the test signature must not be submitted)".into());
    }
    problems
}

/// A cabinet of `files` (stored name, contents), made with the `cab` crate.
fn build_cabinet(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = cab::CabinetBuilder::new();
    let folder = builder.add_folder(cab::CompressionType::MsZip);
    for (name, _) in files {
        folder.add_file(name.clone());
    }
    let mut writer = builder.build(Cursor::new(Vec::new())).expect("cabinet header");
    let mut contents = files.iter().map(|(_, contents)| contents);
    while let Some(mut file) = writer.next_file().expect("next file") {
        file.write_all(contents.next().expect("contents")).expect("file contents");
    }
    writer.finish().expect("cabinet").into_inner()
}

fn submission() -> (Vec<u8>, PathBuf) {
    let dir = require_package(&package_dir());
    let path = cabinet_path();
    let bytes = fs::read(&path)
        .unwrap_or_else(|error| panic!("{}: {error}: run `cargo make package` first", path.display()));
    (bytes, dir)
}

#[track_caller]
fn assert_submission_problem(files: &[(String, Vec<u8>)], dir: &Path, expected: &str) {
    assert_reported(&submission_problems(&build_cabinet(files), dir), expected);
}

#[test]
fn the_submission_cabinet_holds_the_package_for_attestation() {
    let (bytes, dir) = submission();
    let problems = submission_problems(&bytes, &dir);
    assert!(problems.is_empty(), "{}:\n{}", cabinet_path().display(), listed(&problems));
}

#[test]
fn submission_checker_reports_a_root_file_a_missing_pdb_and_other_images() {
    let (bytes, dir) = submission();
    let files = cabinet_files(&bytes).expect("the package's cabinet");
    // The checker's own reading agrees with a cabinet rebuilt from the same files.
    assert_eq!(submission_problems(&build_cabinet(&files), &dir), Vec::<String>::new());

    let mut at_root = files.clone();
    at_root[0].0 = at_root[0].0.replace("pmupcw\\", "");
    assert_submission_problem(&at_root, &dir, "is not a file of the folder pmupcw\\");

    let no_pdb: Vec<_> = files.iter().filter(|(name, _)| !name.ends_with(".pdb")).cloned().collect();
    assert_eq!(no_pdb.len() + 1, files.len(), "the cabinet has one .pdb");
    assert_submission_problem(&no_pdb, &dir, "pmupcw\\ holds");

    let sys = files.iter().position(|(name, _)| name.ends_with(".sys")).expect("a .sys");
    let mut other = files.clone();
    let code = other[sys].1.len() / 2;
    other[sys].1[code] ^= 0xff;
    assert_submission_problem(&other, &dir, "is not the package's image");

    let mut signed = files.clone();
    signed[sys].1 = fs::read(dir.join(DRIVER_FILE)).expect("the package's pmupcw.sys");
    assert_submission_problem(&signed, &dir, "carries a signature");
}

/// The files a MakeCab directive file adds (its lines that are neither directives, `.`, nor
/// comments, `;`), as the cabinet stores them: `DestinationDir\name`.
fn ddf_files(text: &str) -> Result<BTreeSet<String>, String> {
    let mut destination = None;
    let mut files = BTreeSet::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with(';')) {
        if let Some(directive) = line.strip_prefix('.') {
            if let Some(dir) = directive.strip_prefix("Set DestinationDir=") {
                destination = Some(dir.to_owned());
            }
            continue;
        }
        let dir =
            destination.as_deref().ok_or_else(|| format!("{line} is added before any DestinationDir"))?;
        let name = line.rsplit('\\').next().unwrap_or(line);
        files.insert(format!("{dir}\\{name}"));
    }
    Ok(files)
}

#[test]
fn the_makecab_directives_add_the_files_of_the_linux_cabinet() {
    let (bytes, _) = submission();
    let cabinet: BTreeSet<String> =
        cabinet_files(&bytes).expect("the cabinet reads").into_iter().map(|(name, _)| name).collect();
    let ddf = read_text(&repository().join("scripts/windows/pmupcw-attestation.ddf"));
    assert_eq!(ddf_files(&ddf), Ok(cabinet.clone()));
    let missing = ddf.replace("pmupcw\\pmupcw.pdb\n", "");
    assert_ne!(ddf_files(&missing), Ok(cabinet), "a .ddf without the symbols must differ");
}
