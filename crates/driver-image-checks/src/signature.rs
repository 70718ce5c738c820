//! The embedded Authenticode signature checked against its certificate authority with
//! `osslsigncode verify`: rule `Rule::Signature` only proves that a signature is embedded, this proves
//! that it matches the image.

use std::io::ErrorKind;
use std::path::Path;
use std::process::Command;

/// Verifies the embedded Authenticode signature of `image` against the certificate authority (or
/// self-signed test certificate) `ca_pem` with `osslsigncode verify`. On failure returns its output,
/// which says what did not match (digest, chain, ...).
pub fn verify_signature(image: &Path, ca_pem: &Path) -> Result<(), String> {
    let output = Command::new("osslsigncode")
        .arg("verify")
        .arg("-CAfile")
        .arg(ca_pem)
        .arg("-in")
        .arg(image)
        .output()
        .map_err(|error| match error.kind() {
            ErrorKind::NotFound => {
                "osslsigncode is not installed (apt-get install osslsigncode); it verifies the \
                 driver's Authenticode signature"
                    .to_string()
            }
            _ => format!("cannot run osslsigncode: {error}"),
        })?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "osslsigncode verify -CAfile {} -in {} failed ({}):\n{}{}",
        ca_pem.display(),
        image.display(),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    ))
}
