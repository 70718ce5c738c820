//! What every export does on entry: the calling thread's state, the check of the export's documented
//! maximum IRQL, and the UNICODE_STRING arguments several exports take (its documented invariants
//! checked as the driver passes it). Every export module imports these from here, below the export
//! table (`super`) that binds the exports' names.

use crate::{cpu, image_map, violations};

/// The calling thread's state on entry to an export.
pub(crate) struct Call {
    pub kpcr: &'static cpu::Kpcr,
    pub export: &'static str,
    /// The driver's return address as an image RVA.
    pub caller_rva: Option<u64>,
}

impl Call {
    /// Records a violation at this call.
    pub fn violation(&self, message: String) {
        violations::record(self.export, self.caller_rva, message);
    }
}

/// Entry to export `export`, documented for IRQL <= `max_irql`: records a violation if called above it.
pub(crate) fn enter(export: &'static str, max_irql: u8) -> Call {
    let kpcr = cpu::current();
    let caller_rva = image_map::rva_of(kpcr.last_caller());
    let call = Call { kpcr, export, caller_rva };
    let irql = kpcr.irql();
    if irql > max_irql {
        call.violation(format!("called at IRQL {irql}, above its maximum {max_irql}"));
    }
    call
}

/// A UNICODE_STRING as the driver passes it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UnicodeString {
    pub length: u16,
    pub maximum_length: u16,
    pub buffer: *const u16,
}

impl UnicodeString {
    /// Views `units` (which must outlive every use of the result).
    pub fn from_units(units: &[u16]) -> UnicodeString {
        let bytes = (units.len() * 2) as u16;
        UnicodeString { length: bytes, maximum_length: bytes, buffer: units.as_ptr() }
    }
}

/// The code units of a driver-supplied UNICODE_STRING, or why it is invalid.
///
/// # Safety
/// `string` must be null or point to a UNICODE_STRING whose Buffer holds Length bytes.
pub(crate) unsafe fn units_of(string: *const UnicodeString) -> Result<Vec<u16>, &'static str> {
    // SAFETY: null or valid by the contract.
    let Some(string) = (unsafe { string.as_ref() }) else { return Err("NULL UNICODE_STRING") };
    if string.length % 2 != 0 {
        return Err("odd Length");
    }
    if string.length > string.maximum_length {
        return Err("Length above MaximumLength");
    }
    if string.length == 0 {
        return Ok(Vec::new());
    }
    if string.buffer.is_null() {
        return Err("NULL Buffer");
    }
    // SAFETY: Buffer holds Length bytes by the contract.
    Ok(unsafe { std::slice::from_raw_parts(string.buffer, usize::from(string.length / 2)) }.to_vec())
}
