/* The host's TSC frequency, for TCG guests.  Under TCG the guest's rdtsc
 * reads the host's TSC, but the guest kernel has no PIT, HPET or ACPI PM
 * timer to calibrate it against: it marks the TSC unstable, runs on
 * refined jiffies and calibrates its delay loop by hand.  Telling it the
 * frequency (tsc_early_khz=) gives it the TSC clocksource and a computed
 * loops-per-jiffy instead. */
#ifndef SBX_VM_TSC_H
#define SBX_VM_TSC_H

/* kHz, measured against CLOCK_MONOTONIC_RAW (about 20 ms) once per boot
 * of the host and remembered in the state directory (vm/tsc_cache.h); 0
 * when the host has no invariant TSC or is not x86-64. */
unsigned sbx_host_tsc_khz(void);

#endif
