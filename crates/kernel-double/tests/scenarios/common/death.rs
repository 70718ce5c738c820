//! Death tests: a scenario whose fault must kill the process (the double reports it and aborts) runs in
//! a child process, this test binary re-run on that one test, and the parent checks how it died.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

/// Set in the child's environment.
const CHILD: &str = "KERNEL_DOUBLE_DEATH_CHILD";

/// Whether this process is the child of a death test.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}

/// The name libtest knows the test by, from its path as `concat!(module_path!(), "::", name)` gives
/// it: the path without its first segment, the test binary's crate name.
pub fn test_name(path: &str) -> &str {
    path.split_once("::").map_or(path, |(_crate, name)| name)
}

/// Runs the test at `path` (`concat!(module_path!(), "::", name)`) of this test binary alone in a
/// child process (which sees [`is_child`]) and returns its output and stderr, after checking it died
/// of SIGABRT (the double's fatal report).
pub fn run_child(path: &str) -> (Output, String) {
    let (output, stderr) = run_child_with(path, &[]);
    assert_eq!(output.status.signal(), Some(libc::SIGABRT), "child status {:?}\n{stderr}", output.status);
    (output, stderr)
}

/// Runs the test at `path` alone in a child process (which sees [`is_child`]) with `environment`
/// added, however it ends; returns its output and stderr.
pub fn run_child_with(path: &str, environment: &[(&str, String)]) -> (Output, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test_name(path), "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .envs(environment.iter().map(|(name, value)| (name, value)))
        .output()
        .expect("running the child");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}
