<#
.SYNOPSIS
    What Install-Pmupcw.ps1, Uninstall-Pmupcw.ps1, Enable-Verifier.ps1 and Test-Pmupcw.ps1 share: step
    messages, running a native tool with checked exit codes, the pmupcw service's state, image and image
    folder, stopping it, the counter provider a manifest declares, an INF's DriverVer and Driver
    Verifier's view of a driver. Each script imports it from its own folder (the package folder).
#>
Set-StrictMode -Version Latest

$script:StepPrefix = 'pmupcw'

# The word every Write-Step line starts with (the script's name for itself: install, uninstall, ...).
function Set-StepPrefix([string]$Prefix) { $script:StepPrefix = $Prefix }

function Write-Step([string]$Message) { Write-Host "$($script:StepPrefix): $Message" }

# Runs a native tool, echoes its output, and throws unless its exit code is one of $OkExitCodes.
function Invoke-Tool {
    param([string]$FilePath, [string[]]$Arguments, [int[]]$OkExitCodes = @(0), [switch]$Quiet)
    # Windows PowerShell 5.1 turns a native tool's redirected stderr into terminating errors under 'Stop'.
    $ErrorActionPreference = 'Continue'
    Write-Step "> $FilePath $($Arguments -join ' ')"
    $output = & $FilePath @Arguments 2>&1 | Out-String
    $code = $LASTEXITCODE
    if (-not $Quiet -and $output.Trim()) { Write-Host $output.TrimEnd() }
    if ($OkExitCodes -notcontains $code) {
        throw "$FilePath $($Arguments -join ' ') failed with exit code $code.`n$($output.TrimEnd())"
    }
    [pscustomobject]@{ ExitCode = $code; Output = $output }
}

# The state of the kernel driver service $Name (RUNNING, STOPPED, START_PENDING, STOP_PENDING, ...), or
# MISSING. Read from CIM, not from sc.exe query's STATE line, whose label Windows localizes: a kernel
# driver's service is a Win32_SystemDriver (https://learn.microsoft.com/windows/win32/cimwin32prov/win32-systemdriver),
# whose State is one of fixed values ('Running', 'Stopped', 'Start Pending', ...), written here in
# sc.exe's form (upper case, '_' for the space), the names the scripts compare with.
function Get-ServiceState([string]$Name) {
    $driver = Get-CimInstance -ClassName Win32_SystemDriver -Filter "Name='$Name'" -ErrorAction Stop
    if (-not $driver) { return 'MISSING' }
    $driver.State.ToUpperInvariant().Replace(' ', '_')
}

# The full path of the service's image (in the driver store), or $null without a service. The service
# starts whatever file this names; one that is already running keeps the image it was started from.
function Get-ServiceImagePath([string]$Name) {
    $key = "HKLM:\SYSTEM\CurrentControlSet\Services\$Name"
    if (-not (Test-Path $key)) { return $null }
    $image = (Get-ItemProperty -Path $key -Name ImagePath -ErrorAction SilentlyContinue).ImagePath
    if (-not $image) { return $null }
    ConvertFrom-KernelPath $image
}

# A file path as the kernel writes it (\??\C:\..., \SystemRoot\..., system32\...) as a Win32 path.
function ConvertFrom-KernelPath([string]$Path) {
    $Path = $Path -replace '^\\\?\?\\', ''
    $Path = $Path -replace '^(?i)\\SystemRoot\\', ($env:SystemRoot.TrimEnd('\') + '\')
    if ($Path -match '^(?i)system32\\') { $Path = Join-Path $env:SystemRoot $Path }
    $Path
}

# The native functions below: ntdll's NtQuerySystemInformation and psapi's driver enumeration.
function Initialize-NativeApi {
    if ('PmupcwTools.Native' -as [type]) { return }
    Add-Type -Namespace PmupcwTools -Name Native -MemberDefinition @'
[DllImport("ntdll.dll")]
public static extern int NtQuerySystemInformation(int informationClass, byte[] information, int length, out int returned);
[DllImport("psapi.dll", SetLastError = true)]
public static extern bool EnumDeviceDrivers([Out] IntPtr[] imageBases, int size, out int needed);
[DllImport("psapi.dll", SetLastError = true, CharSet = CharSet.Unicode)]
public static extern int GetDeviceDriverBaseNameW(IntPtr imageBase, System.Text.StringBuilder name, int size);
[DllImport("psapi.dll", SetLastError = true, CharSet = CharSet.Unicode)]
public static extern int GetDeviceDriverFileNameW(IntPtr imageBase, System.Text.StringBuilder name, int size);
'@
}

# What the running boot enforces, read from the kernel rather than from bcdedit's (localized) text.
# NtQuerySystemInformation(SystemCodeIntegrityInformation = 103) fills SYSTEM_CODEINTEGRITY_INFORMATION
# { ULONG Length; ULONG CodeIntegrityOptions } (https://learn.microsoft.com/windows/win32/api/winternl/nf-winternl-ntquerysysteminformation):
# CODEINTEGRITY_OPTION_TESTSIGN (0x02) is set when this boot loads test-signed drivers,
# CODEINTEGRITY_OPTION_HVCI_KMCI_ENABLED (0x400) when memory integrity (HVCI) is on. Secure Boot:
# Confirm-SecureBootUEFI (https://learn.microsoft.com/powershell/module/secureboot/confirm-securebootuefi),
# $true or $false, and PlatformNotSupportedException on a machine without UEFI ($false here); $null
# when it cannot tell.
function Get-CodeIntegrityState {
    Initialize-NativeApi
    $information = New-Object byte[] 8
    [BitConverter]::GetBytes([int]8).CopyTo($information, 0)
    $returned = 0
    $status = [PmupcwTools.Native]::NtQuerySystemInformation(103, $information, 8, [ref]$returned)
    if ($status -ne 0) {
        throw ('NtQuerySystemInformation(SystemCodeIntegrityInformation) failed with NTSTATUS 0x{0:X8}' -f $status)
    }
    $options = [BitConverter]::ToUInt32($information, 4)
    $secureBoot = try {
        [bool](Confirm-SecureBootUEFI -ErrorAction Stop)
    } catch [System.PlatformNotSupportedException] {
        $false
    } catch {
        $null
    }
    [pscustomobject]@{
        Options     = $options
        TestSigning = ($options -band 0x2) -ne 0
        Hvci        = ($options -band 0x400) -ne 0
        SecureBoot  = $secureBoot
    }
}

# Whether the boot entry Windows starts next allows test-signed drivers: BcdLibraryBoolean_AllowPrereleaseSignatures
# (0x16000049, https://learn.microsoft.com/previous-versions/windows/desktop/bcd/bcdlibraryelementtypes)
# of {current} ({fa926493-6f1c-4193-a414-58f0b2456d1e}), what `bcdedit /set testsigning on` writes,
# read through the BCD WMI provider (https://learn.microsoft.com/previous-versions/windows/desktop/bcd/bcd-wmi-provider),
# so no localized text is parsed. $true, $false, or $null when it cannot tell.
function Get-BcdTestSigning {
    try {
        $store = ([wmiclass]'\\.\root\wmi:BcdStore').OpenStore('').Store
        $current = $store.OpenObject('{fa926493-6f1c-4193-a414-58f0b2456d1e}').Object
        $element = $current.GetElement(0x16000049)
        if (-not $element.ReturnValue) { return $false }
        [bool]$element.Element.Boolean
    } catch {
        $null
    }
}

# The file the loaded image named $Driver (pmupcw.sys) was loaded from, or $null when no driver of that
# name is loaded or Windows does not tell. A running service keeps the image it was started from,
# whatever its ImagePath says since: EnumDeviceDrivers and GetDeviceDriverFileNameW
# (https://learn.microsoft.com/windows/win32/api/psapi/nf-psapi-getdevicedriverfilenamew) list the
# loaded images. They need SeDebugPrivilege for the image bases (Process.EnterDebugMode,
# https://learn.microsoft.com/dotnet/api/system.diagnostics.process.enterdebugmode).
function Get-LoadedDriverPath([string]$Driver) {
    Initialize-NativeApi
    try { [System.Diagnostics.Process]::EnterDebugMode() } catch { return $null }
    $needed = 0
    $null = [PmupcwTools.Native]::EnumDeviceDrivers($null, 0, [ref]$needed)
    $bases = New-Object IntPtr[] ([int]($needed / [IntPtr]::Size) + 16)
    if (-not [PmupcwTools.Native]::EnumDeviceDrivers($bases, $bases.Length * [IntPtr]::Size, [ref]$needed)) { return $null }
    $name = New-Object System.Text.StringBuilder 1024
    foreach ($base in $bases[0..([int]($needed / [IntPtr]::Size) - 1)]) {
        if ($base -eq [IntPtr]::Zero) { continue }
        $null = $name.Clear()
        if ([PmupcwTools.Native]::GetDeviceDriverBaseNameW($base, $name, $name.Capacity) -eq 0) { continue }
        if ($name.ToString() -ne $Driver) { continue }
        $null = $name.Clear()
        if ([PmupcwTools.Native]::GetDeviceDriverFileNameW($base, $name, $name.Capacity) -eq 0) { return $null }
        return ConvertFrom-KernelPath $name.ToString()
    }
    $null
}

# The folder the service's image runs from (the driver store folder), or $null without a service.
function Get-ServiceImageFolder([string]$Name) {
    $image = Get-ServiceImagePath $Name
    if (-not $image) { return $null }
    Split-Path -Parent $image
}

# Stops a running driver service and waits until it has (the driver's unload routine has returned).
function Stop-DriverService([string]$Name) {
    $null = Invoke-Tool sc.exe @('stop', $Name) -OkExitCodes @(0, 1062)
    for ($i = 0; $i -lt 20 -and (Get-ServiceState $Name) -ne 'STOPPED'; $i++) { Start-Sleep -Milliseconds 500 }
    $state = Get-ServiceState $Name
    if ($state -ne 'STOPPED') { throw "service $Name did not stop (state $state)." }
}

# The counter provider the manifest declares: its GUID, and whether lodctr has registered it.
function Get-CounterProvider([string]$Manifest) {
    $guid = ([xml](Get-Content -LiteralPath $Manifest -Raw)).instrumentationManifest.instrumentation.counters.provider.providerGuid
    $key = "HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion\Perflib\_V2Providers\$guid"
    [pscustomobject]@{ Guid = $guid; Registered = (Test-Path $key) }
}

# An INF's DriverVer (`DriverVer = mm/dd/yyyy,w.x.y.z` in [Version], as Date and Version strings), or
# $null when the INF has none. https://learn.microsoft.com/windows-hardware/drivers/install/inf-driverver-directive
function Get-InfDriverVer([string]$Inf) {
    $line = Select-String -LiteralPath $Inf -Pattern '^\s*DriverVer\s*=\s*([^,;]+),\s*([0-9.]+)' | Select-Object -First 1
    if (-not $line) { return $null }
    [pscustomobject]@{ Date = $line.Matches[0].Groups[1].Value.Trim(); Version = $line.Matches[0].Groups[2].Value }
}

# Driver Verifier's view of a driver (https://learn.microsoft.com/windows-hardware/drivers/devtest/verifier-command-line):
# verifier /querysettings lists the drivers the saved settings verify from the next restart on, one per
# line; verifier /query lists the drivers verified now, only while they are loaded. verifier.exe
# returns 2 where it changed settings that a restart applies, 0 otherwise.
function Get-VerifierState([string]$Driver) {
    $settings = Invoke-Tool verifier.exe @('/querysettings') -Quiet -OkExitCodes @(0, 2)
    $now = Invoke-Tool verifier.exe @('/query') -Quiet -OkExitCodes @(0, 2)
    $name = [regex]::Escape($Driver)
    [pscustomobject]@{
        Configured = $settings.Output -match "(?im)^\s*$name\s*$"
        Active     = $now.Output -match "(?im)\b$name\b"
        Settings   = $settings.Output
        Query      = $now.Output
    }
}

# What signs a package file, from facts that are not text: Get-AuthenticodeSignature's Status, a
# SignatureStatus enum name (https://learn.microsoft.com/dotnet/api/system.management.automation.signaturestatus),
# the signer certificate's thumbprint ($Signer, '' when unsigned), the package's test certificate's
# thumbprint ($TestSigner, '' in a package without pmupcw.cer) and whether the signer certificate has
# one of Microsoft's driver-signing enhanced key usages ($DriverVerification). Returns:
#   'Unsigned'    no signature;
#   'Test'        signed by the package's own test certificate: Valid once pmupcw.cer is in Root,
#                 UnknownError or NotTrusted before (a self-signed root not yet trusted);
#   'Production'  a valid signature whose signer is Microsoft's driver signing (attestation or HLK);
#   'Invalid'     anything else: a file changed after signing (HashMismatch), or a signer that is
#                 neither.
# Install-Pmupcw.ps1 decides with it; tests/deployment/boot_checks.rs runs it on every input.
function Get-SignatureKind {
    param([string]$Status, [string]$Signer, [string]$TestSigner, [bool]$DriverVerification)
    if ($Status -eq 'NotSigned') { return 'Unsigned' }
    if ($Status -eq 'HashMismatch') { return 'Invalid' }
    if ($TestSigner -and $Signer -eq $TestSigner) {
        if ($Status -eq 'Valid' -or $Status -eq 'UnknownError' -or $Status -eq 'NotTrusted') { return 'Test' }
        return 'Invalid'
    }
    if ($Status -eq 'Valid' -and $DriverVerification) { return 'Production' }
    'Invalid'
}

# The signature of one package file, classified by Get-SignatureKind from what
# Get-AuthenticodeSignature (https://learn.microsoft.com/powershell/module/microsoft.powershell.security/get-authenticodesignature)
# returns as data (its Status enum and its SignerCertificate's properties), never from its
# StatusMessage, which Windows localizes. $TestCertificate: the package's pmupcw.cer, or $null.
# Microsoft's driver signing is told by the signer's enhanced key usages: Windows Hardware Driver
# Verification, 1.3.6.1.4.1.311.10.3.5 (HLK), and Windows Hardware Driver Attested Verification,
# 1.3.6.1.4.1.311.10.3.5.1 (attestation): https://learn.microsoft.com/windows-hardware/drivers/dashboard/code-signing-validate
function Get-FileSignature([string]$Path, $TestCertificate) {
    $signature = Get-AuthenticodeSignature -LiteralPath $Path
    $signer = $signature.SignerCertificate
    $thumbprint = ''
    $usages = @()
    if ($signer) {
        $thumbprint = $signer.Thumbprint
        $usages = @($signer.Extensions |
                Where-Object { $_ -is [System.Security.Cryptography.X509Certificates.X509EnhancedKeyUsageExtension] } |
                ForEach-Object { $_.EnhancedKeyUsages } | ForEach-Object { $_.Value })
    }
    $testThumbprint = if ($TestCertificate) { $TestCertificate.Thumbprint } else { '' }
    $driverVerification = ($usages -contains '1.3.6.1.4.1.311.10.3.5') -or ($usages -contains '1.3.6.1.4.1.311.10.3.5.1')
    $status = [string]$signature.Status
    [pscustomobject]@{
        File   = Split-Path -Leaf $Path
        Status = $status
        Signer = $thumbprint
        Kind   = Get-SignatureKind -Status $status -Signer $thumbprint -TestSigner $testThumbprint `
            -DriverVerification $driverVerification
    }
}

# The package's signature: the driver image's and the catalog's, which must be of one kind (an image
# and a catalog from different packages, or one re-signed alone, are not). Kind as Get-SignatureKind
# says; Files and Detail name them for the messages.
function Get-PackageSignature([string]$Driver, [string]$Catalog, $TestCertificate) {
    $files = @((Get-FileSignature $Driver $TestCertificate), (Get-FileSignature $Catalog $TestCertificate))
    $kinds = @($files | ForEach-Object { $_.Kind } | Sort-Object -Unique)
    $kind = if ($kinds.Count -eq 1) { $kinds[0] } elseif ($kinds -contains 'Unsigned') { 'Unsigned' } else { 'Invalid' }
    $detail = @($files | ForEach-Object {
            $signer = if ($_.Signer) { "signer $($_.Signer)" } else { 'no signer' }
            "$($_.File): status $($_.Status), $signer, $($_.Kind)"
        }) -join '; '
    [pscustomobject]@{ Kind = $kind; Files = (@($files | ForEach-Object { $_.File }) -join ' and '); Detail = $detail }
}

# Whether a package whose signature is $Signature (Get-PackageSignature's Kind) can be installed on this
# boot: $null when it can, else why not and what to do, the message Install-Pmupcw.ps1 stops with.
# $TestSigning: this boot loads test-signed drivers (Get-CodeIntegrityState); $SecureBoot: $true,
# $false or $null (unknown); $Configured: the boot entry's test signing (Get-BcdTestSigning): $true,
# $false or $null (unknown); $Options: the code integrity options, as text. A production-signed
# package installs whatever the boot (Windows loads Microsoft-signed drivers with or without test
# signing, and under Secure Boot); a test-signed one only where this boot loads test-signed drivers.
# tests/deployment/boot_checks.rs runs this function on every combination and checks each message.
function Get-InstallRefusal {
    param(
        [string]$Signature, [string]$Files, [string]$Detail,
        [bool]$TestSigning, $SecureBoot, $Configured, [string]$Options
    )
    if ($Signature -eq 'Unsigned') {
        return ("$Files carry no signature ($Detail), and Windows loads no unsigned driver. Install a package " +
            "as 'cargo make package' makes it (test-signed) or as Microsoft signed it (docs/signing.md).")
    }
    if ($Signature -ne 'Test' -and $Signature -ne 'Production') {
        return ("the signatures of $Files are neither this package's test signature nor Microsoft's driver " +
            "signing ($Detail): a file changed after it was signed, or files of different packages were mixed. " +
            "Unpack the package again from a pmupcw-package.zip whose Get-FileHash matches pmupcw-package.zip.sha256.")
    }
    if ($Signature -eq 'Production') { return $null }
    if ($TestSigning) { return $null }
    if ($SecureBoot -eq $true) {
        return ("this package is test-signed, and this boot does not load test-signed drivers (code integrity " +
            "options $($Options): no TESTSIGN): Secure Boot is on, which keeps test signing off. Where Secure Boot " +
            "stays on, install a production-signed package (attestation or HLK signing, docs/signing.md), which " +
            "needs neither test signing nor a certificate. On a test VM: turn Secure Boot off in the firmware " +
            "(the VM's settings), run 'bcdedit /set testsigning on' from an elevated prompt and restart.")
    }
    if ($Configured -eq $true) {
        return ("test signing is set for the next boot ('bcdedit /set testsigning on' was run), but this boot " +
            "started without it (code integrity options $($Options)), so Windows will not load the test-signed " +
            "$Files. Restart first (Restart-Computer), then run this script again.")
    }
    $secureBootHint = ''
    if ($null -eq $SecureBoot) {
        $secureBootHint = 'With Secure Boot on, bcdedit refuses: turn it off in the firmware (the VM''s settings) first. '
    }
    $known = ''
    if ($null -eq $Configured) { $known = ' If you have already run it, restart first.' }
    ("this boot does not load test-signed drivers (code integrity options $($Options): no TESTSIGN), so " +
        "Windows will not load the test-signed $Files. $($secureBootHint)Run 'bcdedit /set testsigning on' " +
        "from an elevated prompt and restart, then run this script again." + $known)
}

Export-ModuleMember -Function Set-StepPrefix, Write-Step, Invoke-Tool, Get-ServiceState, Get-SignatureKind, Get-FileSignature, Get-PackageSignature, Get-InstallRefusal, Get-ServiceImagePath, ConvertFrom-KernelPath, Initialize-NativeApi, Get-CodeIntegrityState, Get-BcdTestSigning, Get-LoadedDriverPath, Get-ServiceImageFolder, Stop-DriverService, Get-CounterProvider, Get-InfDriverVer, Get-VerifierState
