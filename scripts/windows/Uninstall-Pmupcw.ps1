#Requires -RunAsAdministrator
<#
.SYNOPSIS
    Removes pmupcw: stops the service, unregisters its counters and deletes its driver package.

.DESCRIPTION
    Each step checks first and is skipped when there is nothing to do, so running the script again
    (or on a machine without pmupcw) is harmless:
      1. sc.exe stop pmupcw (when running; the service starts at boot, so where the driver does not
         stop, the steps below still run and it is not loaded again after the next restart);
      2. unlodctr /m:pmupcw.man (when the counter provider is registered);
      3. pnputil /delete-driver <oemNN.inf> /uninstall /force for every driver package whose original
         name is pmupcw.inf (found with pnputil /enum-drivers); as a primitive driver, this also removes
         the service;
      4. sc.exe delete pmupcw if a service is left over (e.g. from a manual sc.exe create);
      5. with -RemoveCertificate, the test certificate leaves LocalMachine\Root and TrustedPublisher.
    Any failure stops the script with a message and exit code 1.

.PARAMETER PackageDir
    The package folder (for pmupcw.man and pmupcw.cer). Default: the folder of this script.
#>
[CmdletBinding()]
param(
    [string]$PackageDir = $PSScriptRoot,
    [switch]$RemoveCertificate
)
Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

# The package files this script uses, by role (tests/deployment.rs checks each exists in the package).
$PackageFiles = @{
    Inf           = 'pmupcw.inf'
    Certificate   = 'pmupcw.cer'
    Manifest      = 'pmupcw.man'
    Driver        = 'pmupcw.sys'
    InstallScript = 'Install-Pmupcw.ps1'
    Tools         = 'PmupcwTools.psm1'
}
$ServiceName = 'pmupcw'

# The helpers every pmupcw script shares (Write-Step, Invoke-Tool, ...), from the package folder.
$tools = Join-Path $PSScriptRoot $PackageFiles.Tools
if (-not (Test-Path -LiteralPath $tools -PathType Leaf)) {
    Write-Error "uninstall: FAILED: $tools is missing: keep the package's scripts together." -ErrorAction Continue
    exit 1
}
Import-Module $tools -Force
Set-StepPrefix 'uninstall'

try {
    # 1. Stop the service.
    $state = Get-ServiceState $ServiceName
    if ($state -eq 'RUNNING') {
        try {
            Stop-DriverService $ServiceName
            Write-Step "stopped service $ServiceName"
        } catch {
            # The service starts at boot: removing it below is what keeps the driver from loading again.
            Write-Warning ("$($_.Exception.Message) It stays loaded until the next restart; its package and " +
                'service are removed all the same, so it does not load again.')
        }
    } else {
        Write-Step "service $ServiceName is not running ($state)"
    }

    # 2. Unregister the counters: the manifest beside the driver (where Install-Pmupcw.ps1 registered
    #    it from), else the package's copy.
    $manifest = $null
    $folder = Get-ServiceImageFolder $ServiceName
    if ($folder -and (Test-Path -LiteralPath (Join-Path $folder $PackageFiles.Manifest))) {
        $manifest = Join-Path $folder $PackageFiles.Manifest
    } elseif (Test-Path -LiteralPath (Join-Path $PackageDir $PackageFiles.Manifest)) {
        $manifest = Join-Path $PackageDir $PackageFiles.Manifest
    }
    if ($manifest) {
        $provider = Get-CounterProvider $manifest
        if ($provider.Registered) {
            $null = Invoke-Tool unlodctr.exe @("/m:$manifest")
            Write-Step "unregistered counter provider $($provider.Guid)"
        } else {
            Write-Step "counter provider $($provider.Guid) is not registered"
        }
    } else {
        Write-Warning "no $($PackageFiles.Manifest) found (beside the driver or in $PackageDir): counters not unregistered"
    }

    # 3. Delete every driver package installed from pmupcw.inf. pnputil lists packages in blocks
    #    separated by blank lines; a block naming both oemNN.inf and pmupcw.inf is ours (this does
    #    not depend on the labels, which Windows localizes).
    $enum = Invoke-Tool pnputil.exe @('/enum-drivers') -Quiet
    $published = @(
        ($enum.Output -split '(?:\r?\n){2,}') |
            Where-Object { $_ -match "(?im)\b$([regex]::Escape($PackageFiles.Inf))\s*$" } |
            ForEach-Object { if ($_ -match '(?i)\b(oem\d+\.inf)\b') { $Matches[1] } }
    )
    if ($published.Count -eq 0) {
        Write-Step "no driver package from $($PackageFiles.Inf) is installed"
    }
    foreach ($oem in $published) {
        $del = Invoke-Tool pnputil.exe @('/delete-driver', $oem, '/uninstall', '/force') -OkExitCodes @(0, 3010)
        if ($del.ExitCode -eq 3010) { Write-Warning "pnputil says a restart is needed to finish removing $oem." }
        Write-Step "deleted driver package $oem ($($PackageFiles.Inf))"
    }

    # 4. A service left without its package.
    if ((Get-ServiceState $ServiceName) -ne 'MISSING') {
        $null = Invoke-Tool sc.exe @('delete', $ServiceName) -OkExitCodes @(0, 1072)
        Write-Step "deleted leftover service $ServiceName"
    }

    # 5. The test certificate, on request.
    if ($RemoveCertificate) {
        $cer = Join-Path $PackageDir $PackageFiles.Certificate
        if (-not (Test-Path -LiteralPath $cer)) { throw "-RemoveCertificate: $cer is missing" }
        $cert = [System.Security.Cryptography.X509Certificates.X509Certificate2]::new($cer)
        foreach ($storeName in 'Root', 'TrustedPublisher') {
            $store = [System.Security.Cryptography.X509Certificates.X509Store]::new($storeName, 'LocalMachine')
            $store.Open('ReadWrite')
            try {
                $found = $store.Certificates.Find('FindByThumbprint', $cert.Thumbprint, $false)
                if ($found.Count -gt 0) {
                    $store.RemoveRange($found)
                    Write-Step "removed certificate $($cert.Thumbprint) from LocalMachine\$storeName"
                } else {
                    Write-Step "certificate $($cert.Thumbprint) is not in LocalMachine\$storeName"
                }
            } finally {
                $store.Close()
            }
        }
    }
    Write-Step 'done'
    exit 0
} catch {
    Write-Error "uninstall: FAILED: $($_.Exception.Message)" -ErrorAction Continue
    exit 1
}
