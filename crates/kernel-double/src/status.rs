//! The NTSTATUS values the fake kernel returns.

pub type NtStatus = i32;

pub const STATUS_SUCCESS: NtStatus = 0;
pub const STATUS_TIMEOUT: NtStatus = 0x102;
pub const STATUS_BUFFER_OVERFLOW: NtStatus = 0x8000_0005_u32 as i32;
pub const STATUS_DEVICE_BUSY: NtStatus = 0x8000_0011_u32 as i32;
pub const STATUS_BUFFER_TOO_SMALL: NtStatus = 0xC000_0023_u32 as i32;
pub const STATUS_OBJECT_NAME_NOT_FOUND: NtStatus = 0xC000_0034_u32 as i32;
pub const STATUS_INVALID_HANDLE: NtStatus = 0xC000_0008_u32 as i32;
pub const STATUS_ACCESS_DENIED: NtStatus = 0xC000_0022_u32 as i32;
/// A #GP's exception code once KiPreprocessFault has replaced the trap's internal code.
pub const STATUS_ACCESS_VIOLATION: NtStatus = 0xC000_0005_u32 as i32;
pub const STATUS_INVALID_PARAMETER: NtStatus = 0xC000_000D_u32 as i32;
pub const STATUS_NO_MEMORY: NtStatus = 0xC000_0017_u32 as i32;
pub const STATUS_OBJECT_NAME_COLLISION: NtStatus = 0xC000_0035_u32 as i32;
pub const STATUS_INSUFFICIENT_RESOURCES: NtStatus = 0xC000_009A_u32 as i32;
pub const STATUS_NOT_SUPPORTED: NtStatus = 0xC000_00BB_u32 as i32;
pub const STATUS_INVALID_PARAMETER_1: NtStatus = 0xC000_00EF_u32 as i32;
pub const STATUS_INVALID_PARAMETER_2: NtStatus = 0xC000_00F0_u32 as i32;
pub const STATUS_INVALID_PARAMETER_3: NtStatus = 0xC000_00F1_u32 as i32;
pub const STATUS_INVALID_PARAMETER_4: NtStatus = 0xC000_00F2_u32 as i32;
pub const STATUS_INVALID_BUFFER_SIZE: NtStatus = 0xC000_0206_u32 as i32;
pub const STATUS_DUPLICATE_OBJECTID: NtStatus = 0xC000_022A_u32 as i32;
pub const STATUS_DELETE_PENDING: NtStatus = 0xC000_0056_u32 as i32;
