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

# The service's state as sc.exe names it (RUNNING, STOPPED, START_PENDING, ...), or MISSING.
function Get-ServiceState([string]$Name) {
    $ErrorActionPreference = 'Continue'
    $query = & sc.exe query $Name 2>&1 | Out-String
    if ($LASTEXITCODE -eq 1060) { return 'MISSING' }
    if ($query -match 'STATE\s+:\s+\d+\s+(\w+)') { return $Matches[1] }
    throw "sc.exe query $Name failed (exit code $LASTEXITCODE):`n$query"
}

# The full path of the service's image (in the driver store), or $null without a service. The service
# starts whatever file this names; one that is already running keeps the image it was started from.
function Get-ServiceImagePath([string]$Name) {
    $key = "HKLM:\SYSTEM\CurrentControlSet\Services\$Name"
    if (-not (Test-Path $key)) { return $null }
    $image = (Get-ItemProperty -Path $key -Name ImagePath -ErrorAction SilentlyContinue).ImagePath
    if (-not $image) { return $null }
    $image = $image -replace '^\\\?\?\\', ''
    $image = $image -replace '^(?i)\\SystemRoot\\', ($env:SystemRoot.TrimEnd('\') + '\')
    if ($image -match '^(?i)system32\\') { $image = Join-Path $env:SystemRoot $image }
    $image
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
    if ($state -ne 'STOPPED') { throw "service $Name did not stop (state $state); a restart unloads it." }
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

Export-ModuleMember -Function Set-StepPrefix, Write-Step, Invoke-Tool, Get-ServiceState, Get-ServiceImagePath, Get-ServiceImageFolder, Stop-DriverService, Get-CounterProvider, Get-InfDriverVer, Get-VerifierState
