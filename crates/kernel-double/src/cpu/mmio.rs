//! Device memory: a page the fake kernel maps for a device (MmMapIoSpaceEx) is host memory kept
//! PROT_NONE, so every load and store faults. The trap handler passes such a fault here: the
//! instruction is decoded (iced-x86, as [`super::trap`] does), a load's value comes from the device
//! (its [`Device::read`]) into the destination register, a store goes to [`Device::write`], and the
//! thread resumes after the instruction. The device is the platform's (`crate::platform::mmio`), which
//! names itself here before its first mapping, as the special pool names its guard pages.
//!
//! Emulated: `mov r8/r16/r32/r64, [mem]` and `movzx r, byte/word [mem]` (loads), `mov [mem], r` and
//! `mov [mem], imm` (stores); a volatile 32- or 64-bit read compiles to the first. Any other instruction
//! on device memory is a fatal fault, as a real crash is.

use iced_x86::{Code, Instruction, OpKind, Register};
use std::sync::OnceLock;

/// The device behind the mapped pages.
pub struct Device {
    /// Whether a host address is on one of its pages.
    pub contains: fn(u64) -> bool,
    /// A load: (host address, bytes, RIP) -> value.
    pub read: fn(u64, u32, u64) -> u64,
    /// A store: (host address, bytes, value, RIP).
    pub write: fn(u64, u32, u64, u64),
}

static DEVICE: OnceLock<Device> = OnceLock::new();

/// Names the device (once; later calls are ignored).
pub fn set_device(device: Device) {
    let _ = DEVICE.set(device);
}

/// Emulates `instruction`, which faulted on `address`, if that is device memory: `None` if it is not,
/// else `Ok` (resume after it) or why it cannot be emulated.
pub(super) fn emulate(
    instruction: &Instruction,
    registers: &mut [libc::greg_t; 23],
    address: u64,
    rip: u64,
) -> Option<Result<(), &'static str>> {
    let device = DEVICE.get()?;
    if !(device.contains)(address) {
        return None;
    }
    let load = match instruction.code() {
        Code::Mov_r64_rm64 => Some(8),
        Code::Mov_r32_rm32 => Some(4),
        Code::Mov_r16_rm16 => Some(2),
        Code::Mov_r8_rm8 | Code::Movzx_r32_rm8 | Code::Movzx_r64_rm8 | Code::Movzx_r16_rm8 => Some(1),
        Code::Movzx_r32_rm16 | Code::Movzx_r64_rm16 => Some(2),
        _ => None,
    };
    if let Some(width) = load {
        if instruction.op1_kind() != OpKind::Memory {
            return Some(Err("a load from device memory without a memory operand"));
        }
        let value = (device.read)(address, width, rip);
        return Some(set_register(registers, instruction.op0_register(), value, width));
    }
    let width = match instruction.code() {
        Code::Mov_rm64_r64 | Code::Mov_rm64_imm32 => 8,
        Code::Mov_rm32_r32 | Code::Mov_rm32_imm32 => 4,
        Code::Mov_rm16_r16 | Code::Mov_rm16_imm16 => 2,
        Code::Mov_rm8_r8 | Code::Mov_rm8_imm8 => 1,
        _ => return Some(Err("an instruction the double does not emulate on device memory")),
    };
    let value = match instruction.op1_kind() {
        OpKind::Register => match read_register(registers, instruction.op1_register()) {
            Some(value) => value,
            None => return Some(Err("a store from a register the double does not model")),
        },
        _ => instruction.immediate(1),
    };
    let mask = if width == 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
    (device.write)(address, width, value & mask, rip);
    Some(Ok(()))
}

/// The 64-bit registers in encoding order (RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8-R15).
const FULL: [Register; 16] = [
    Register::RAX,
    Register::RCX,
    Register::RDX,
    Register::RBX,
    Register::RSP,
    Register::RBP,
    Register::RSI,
    Register::RDI,
    Register::R8,
    Register::R9,
    Register::R10,
    Register::R11,
    Register::R12,
    Register::R13,
    Register::R14,
    Register::R15,
];

/// A general register's place: its 64-bit register's ucontext slot, its width in bits, and whether
/// it is bits 8-15 (AH, CH, DH, BH). iced-x86 numbers each width's registers in encoding order, the
/// byte registers as AL, CL, DL, BL, AH, CH, DH, BH, SPL, BPL, SIL, DIL, R8L-R15L.
fn place(register: Register) -> Option<(usize, u32, bool)> {
    let number = register as u32;
    let index = |base: Register, count: u32| number.checked_sub(base as u32).filter(|&index| index < count);
    let (full, bits, high) = if let Some(index) = index(Register::RAX, 16) {
        (index, 64, false)
    } else if let Some(index) = index(Register::EAX, 16) {
        (index, 32, false)
    } else if let Some(index) = index(Register::AX, 16) {
        (index, 16, false)
    } else {
        match index(Register::AL, 20)? {
            index @ 4..=7 => (index - 4, 8, true),
            index @ 8..=19 => (index - 4, 8, false),
            index => (index, 8, false),
        }
    };
    Some((super::trap::register_slot(FULL[full as usize])?, bits, high))
}

fn read_register(registers: &[libc::greg_t; 23], register: Register) -> Option<u64> {
    let (slot, _, high) = place(register)?;
    let value = registers[slot] as u64;
    Some(if high { value >> 8 } else { value })
}

fn set_register(
    registers: &mut [libc::greg_t; 23],
    register: Register,
    value: u64,
    width: u32,
) -> Result<(), &'static str> {
    let Some((slot, bits, high)) = place(register) else {
        return Err("a load into a register the double does not model");
    };
    let old = registers[slot] as u64;
    // The loaded bytes; the destination's width decides how they land: a 32-bit destination (mov or
    // movzx) zero-extends into the 64-bit register, 8 and 16 bits merge into it.
    let loaded = if width == 8 { value } else { value & ((1u64 << (8 * width)) - 1) };
    let new = match bits {
        64 | 32 => loaded,
        16 => (old & !0xFFFF) | (loaded & 0xFFFF),
        _ if high => (old & !0xFF00) | ((loaded & 0xFF) << 8),
        _ => (old & !0xFF) | (loaded & 0xFF),
    };
    registers[slot] = new as i64;
    Ok(())
}
