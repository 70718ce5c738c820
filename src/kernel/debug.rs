//! Debug output to the kernel debugger / DebugView, formatted on the stack so it works at raised IRQL.

use crate::text::FixedCString;
use core::fmt::{self, Write};

/// Longest debug line, terminator included. DbgPrint's own limit is 512 bytes.
const LINE_CAPACITY: usize = 256;

/// DbgPrintEx severity (DPFLTR_ERROR_LEVEL, DPFLTR_INFO_LEVEL), which the debugger's component filter
/// for IHVDRIVER compares against its mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Error = 0,
    Info = 3,
}

/// Formats `args` behind a `pmupcw: ` prefix and hands the line to the build mode's printer.
pub fn print(level: Level, args: fmt::Arguments<'_>) {
    let mut line = FixedCString::<LINE_CAPACITY>::new();
    // FixedCString never fails; an over-long line is truncated and marked.
    let _ = line.write_str("pmupcw: ");
    let _ = line.write_fmt(args);
    let _ = line.write_str("\n");
    super::build_mode::debug_print(level, &line);
}

macro_rules! log_info {
    ($($arg:tt)*) => { $crate::kernel::debug::print($crate::kernel::debug::Level::Info, format_args!($($arg)*)) };
}
macro_rules! log_error {
    ($($arg:tt)*) => { $crate::kernel::debug::print($crate::kernel::debug::Level::Error, format_args!($($arg)*)) };
}
