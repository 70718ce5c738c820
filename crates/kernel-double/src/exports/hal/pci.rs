//! HalGetBusDataByOffset: PCI configuration space reads, answered from the platform's device 00:00.0
//! (`crate::platform`): how a driver without a PnP stack, and so without BUS_INTERFACE_STANDARD,
//! reads a device's registers (PCM's Windows driver does so, `msrmain.c` in intel/pcm).

use super::enter;
use crate::cpu::DISPATCH_LEVEL;
use crate::platform;

/// BUS_DATA_TYPE's PCIConfiguration (wdm.h: ConfigurationSpaceUndefined = -1, Cmos, EisaConfiguration,
/// Pos, CbusConfiguration, PCIConfiguration).
pub const PCI_CONFIGURATION: u32 = 4;
/// The common configuration header's size (PCI_COMMON_CONFIG, 256 bytes).
pub const PCI_CONFIG_BYTES: u32 = 256;
/// What an empty slot's VendorID reads (wdm.h `PCI_INVALID_VENDORID`).
pub const PCI_INVALID_VENDORID: u16 = 0xFFFF;

/// `ULONG HalGetBusDataByOffset(BUS_DATA_TYPE BusDataType, ULONG BusNumber, ULONG SlotNumber, PVOID
/// Buffer, ULONG Offset, ULONG Length)`: IRQL <= DISPATCH_LEVEL. "The only supported BusDataType is
/// PCIConfiguration"; BusNumber carries the segment as `(Segment << 8) | BusNumber`; SlotNumber is a
/// PCI_SLOT_NUMBER, the device in bits 0-4 and the function in bits 5-7 (Learn,
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/ntddk/nf-ntddk-halgetbusdatabyoffset>).
/// Returns the bytes read; 0 if the bus does not exist; 2 if the bus exists but the slot has no
/// device, with PCI_INVALID_VENDORID in VendorID (the return values of HalGetBusData, Learn,
/// <https://learn.microsoft.com/windows-hardware/drivers/ddi/ntddk/nf-ntddk-halgetbusdata>, which
/// HalGetBusDataByOffset shares). The double has segment 0, bus 0, with the platform's bridge at
/// device 0 function 0 and no other device. Another BusDataType, a NULL Buffer, reserved slot bits,
/// or a range past the 256-byte header are violations and read nothing.
///
/// # Safety
/// Called by driver code through its import table, with the arguments the routine documents.
pub unsafe extern "win64" fn hal_get_bus_data_by_offset(
    bus_data_type: u32,
    bus_number: u32,
    slot_number: u32,
    buffer: *mut u8,
    offset: u32,
    length: u32,
) -> u32 {
    let call = enter("HalGetBusDataByOffset", DISPATCH_LEVEL);
    if bus_data_type != PCI_CONFIGURATION {
        call.violation(format!("BusDataType {bus_data_type}: only PCIConfiguration (4) is supported"));
        return 0;
    }
    if buffer.is_null() {
        call.violation("NULL Buffer".into());
        return 0;
    }
    if u64::from(offset) + u64::from(length) > u64::from(PCI_CONFIG_BYTES) {
        call.violation(format!("Offset {offset:#x} + Length {length:#x} runs past the 256-byte header"));
        return 0;
    }
    if slot_number >> 8 != 0 {
        call.violation(format!("SlotNumber {slot_number:#x} sets PCI_SLOT_NUMBER's reserved bits"));
        return 0;
    }
    if bus_number != 0 {
        return 0;
    }
    let (device, function) = (slot_number & 0x1F, slot_number >> 5 & 0x7);
    let bridge = platform::current().bridge.as_ref().filter(|_| device == 0 && function == 0);
    let Some(bridge) = bridge else {
        let invalid = PCI_INVALID_VENDORID.to_le_bytes();
        let bytes = length.min(2) as usize;
        // SAFETY: the driver's buffer holds Length bytes; at most 2 are written.
        unsafe { std::ptr::copy_nonoverlapping(invalid.as_ptr(), buffer, bytes) };
        return 2;
    };
    let space = bridge.config_space();
    let range = offset as usize..(offset + length) as usize;
    // SAFETY: the driver's buffer holds Length bytes; the range lies within the 256-byte space.
    unsafe { std::ptr::copy_nonoverlapping(space[range].as_ptr(), buffer, length as usize) };
    length
}
