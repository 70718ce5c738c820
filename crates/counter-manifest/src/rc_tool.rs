//! Finding and running the resource compiler: LLVM's `llvm-rc` (any host) or Microsoft's `rc.exe`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// A resource compiler and the command-line dialect it speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RcTool {
    /// `llvm-rc`: no preprocessing (it would look for clang, and the script needs none) and the code
    /// page given on the command line, because llvm-rc ignores `#pragma code_page`.
    Llvm(OsString),
    /// Microsoft's `rc.exe` (Windows SDK/WDK), which honours `#pragma code_page(65001)`.
    Microsoft(OsString),
}

impl RcTool {
    /// The program to run.
    pub fn program(&self) -> &OsString {
        match self {
            RcTool::Llvm(program) | RcTool::Microsoft(program) => program,
        }
    }
}

/// The names tried for llvm-rc after `LLVM_RC`: the unversioned name, then Debian's versioned ones.
pub const LLVM_RC_NAMES: &[&str] =
    &["llvm-rc", "llvm-rc-14", "llvm-rc-15", "llvm-rc-16", "llvm-rc-17", "llvm-rc-18", "llvm-rc-19"];

/// llvm-rc: the program `llvm_rc_env` names (the `LLVM_RC` environment variable) if given, else the
/// first of [`LLVM_RC_NAMES`] that runs. `None` if none runs.
pub fn find_llvm_rc(llvm_rc_env: Option<OsString>) -> Option<RcTool> {
    if let Some(program) = llvm_rc_env.filter(|p| !p.is_empty()) {
        return Some(RcTool::Llvm(program));
    }
    LLVM_RC_NAMES.iter().map(OsString::from).find(runs).map(RcTool::Llvm)
}

/// Whether `program` can be started (llvm-rc exits non-zero for `/?`-less probes on some versions, so
/// only starting it counts).
fn runs(program: &OsString) -> bool {
    Command::new(program).arg("/?").output().is_ok()
}

/// Compiles the script `rc` into `res`. The error carries the tool's output.
pub fn compile_rc(tool: &RcTool, rc: &Path, res: &Path) -> Result<(), String> {
    let mut command = Command::new(tool.program());
    match tool {
        RcTool::Llvm(_) => {
            // `--` ends the options: llvm-rc takes `/` as an option prefix even on Linux, so an input path
            // such as /check/... or /dev/... would otherwise parse as `/C heck/...` or `/D ev/...`.
            command.args(["/no-preprocess", "/C", "65001", "/FO"]).arg(res).arg("--").arg(rc);
        }
        RcTool::Microsoft(_) => {
            command.args(["/nologo", "/fo"]).arg(res).arg(rc);
        }
    }
    let output = command
        .output()
        .map_err(|error| format!("could not run {}: {error}", tool.program().to_string_lossy()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}) on {}:\n{}{}",
            tool.program().to_string_lossy(),
            output.status,
            rc.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    if !res.is_file() {
        return Err(format!("{} succeeded but wrote no {}", tool.program().to_string_lossy(), res.display()));
    }
    Ok(())
}
