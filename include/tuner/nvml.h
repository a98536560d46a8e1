/* NVIDIA's management library, loaded with dlopen: clocks, temperature, power, throttling. */
#ifndef TUNER_NVML_H
#define TUNER_NVML_H

#include <stddef.h>

/* What the GPU was doing: SM clock, temperature, power, and why it slowed down, if it did. */
struct nvml_state {
	unsigned sm_mhz, temp_c;
	double power_w;
	unsigned long long throttle; /* the reasons that cost speed (see nvml_throttled) */
};

struct nvml_gpu;

/*
 * The GPU with this PCI bus id ("0000:3B:00.0", from cuDeviceGetPCIBusId).
 * NULL (and why, one line) when the library or the GPU is not there: then
 * nothing is watched, and a caller says so once.
 */
struct nvml_gpu *nvml_open(const char *pci_bus_id, char *why, size_t whylen);
void nvml_close(struct nvml_gpu *g);
/* 0 and *out filled, or -1 when a reading failed. */
int nvml_read(struct nvml_gpu *g, struct nvml_state *out);

/*
 * The throttle reasons that slow a measurement down: power cap, thermal and
 * hardware slowdowns, power brake. Idle, application clocks, sync boost and
 * display clocks are not among them.
 */
unsigned long long nvml_throttled(unsigned long long reasons);
/* "sw power cap, hw thermal slowdown" for the reasons set in mask. */
void nvml_describe(unsigned long long mask, char *buf, size_t len);

#endif
