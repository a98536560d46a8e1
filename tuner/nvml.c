/* NVIDIA's management library, loaded with dlopen: clocks, temperature, power, throttling. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/nvml.h"

/* The stable C ABI of libnvidia-ml (nvml.h is not part of the toolkit here). */
typedef void *nvml_device;
enum { NVML_CLOCK_SM = 1, NVML_TEMPERATURE_GPU = 0 };

/* nvmlClocksEventReason bits */
#define R_SW_POWER_CAP   0x4ULL
#define R_HW_SLOWDOWN    0x8ULL
#define R_SW_THERMAL     0x20ULL
#define R_HW_THERMAL     0x40ULL
#define R_HW_POWER_BRAKE 0x80ULL

struct nvml_gpu {
	void *lib;
	nvml_device dev;
	int (*shutdown)(void);
	int (*clock)(nvml_device, int, unsigned *);
	int (*temp)(nvml_device, int, unsigned *);
	int (*power)(nvml_device, unsigned *);
	int (*reasons)(nvml_device, unsigned long long *);
};

static void *sym(void *lib, const char *name, const char *old)
{
	void *f = dlsym(lib, name);

	return f || !old ? f : dlsym(lib, old);
}

struct nvml_gpu *nvml_open(const char *pci_bus_id, char *why, size_t whylen)
{
	struct nvml_gpu *g = xcalloc(1, sizeof(*g));
	int (*init)(void), (*by_pci)(const char *, nvml_device *);
	void *f;

	g->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!g->lib) {
		snprintf(why, whylen, "cannot load libnvidia-ml.so.1: clocks are not watched");
		free(g);
		return NULL;
	}
	f = sym(g->lib, "nvmlInit_v2", "nvmlInit");
	memcpy(&init, &f, sizeof(f));
	f = sym(g->lib, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
	memcpy(&by_pci, &f, sizeof(f));
	f = sym(g->lib, "nvmlShutdown", NULL);
	memcpy(&g->shutdown, &f, sizeof(f));
	f = sym(g->lib, "nvmlDeviceGetClockInfo", NULL);
	memcpy(&g->clock, &f, sizeof(f));
	f = sym(g->lib, "nvmlDeviceGetTemperature", NULL);
	memcpy(&g->temp, &f, sizeof(f));
	f = sym(g->lib, "nvmlDeviceGetPowerUsage", NULL);
	memcpy(&g->power, &f, sizeof(f));
	f = sym(g->lib, "nvmlDeviceGetCurrentClocksEventReasons",
	        "nvmlDeviceGetCurrentClocksThrottleReasons");
	memcpy(&g->reasons, &f, sizeof(f));
	if (!init || !by_pci || !g->shutdown || !g->clock || !g->temp || !g->power || !g->reasons) {
		snprintf(why, whylen,
		         "libnvidia-ml.so.1 lacks an entry point: clocks are not watched");
		dlclose(g->lib);
		free(g);
		return NULL;
	}
	if (init() != 0 || by_pci(pci_bus_id, &g->dev) != 0) {
		snprintf(why, whylen, "NVML cannot open the GPU at %s: clocks are not watched",
		         pci_bus_id);
		if (g->shutdown)
			g->shutdown();
		dlclose(g->lib);
		free(g);
		return NULL;
	}
	return g;
}

void nvml_close(struct nvml_gpu *g)
{
	if (!g)
		return;
	g->shutdown();
	dlclose(g->lib);
	free(g);
}

int nvml_read(struct nvml_gpu *g, struct nvml_state *out)
{
	unsigned mw = 0;

	memset(out, 0, sizeof(*out));
	if (!g || g->clock(g->dev, NVML_CLOCK_SM, &out->sm_mhz) != 0 ||
	    g->temp(g->dev, NVML_TEMPERATURE_GPU, &out->temp_c) != 0 ||
	    g->power(g->dev, &mw) != 0 || g->reasons(g->dev, &out->throttle) != 0)
		return -1;
	out->power_w = mw / 1000.0;
	out->throttle = nvml_throttled(out->throttle);
	return 0;
}

unsigned long long nvml_throttled(unsigned long long reasons)
{
	return reasons &
	       (R_SW_POWER_CAP | R_HW_SLOWDOWN | R_SW_THERMAL | R_HW_THERMAL | R_HW_POWER_BRAKE);
}

void nvml_describe(unsigned long long mask, char *buf, size_t len)
{
	static const struct {
		unsigned long long bit;
		const char *name;
	} names[] = {{R_SW_POWER_CAP, "sw power cap"},
	             {R_HW_SLOWDOWN, "hw slowdown"},
	             {R_SW_THERMAL, "sw thermal slowdown"},
	             {R_HW_THERMAL, "hw thermal slowdown"},
	             {R_HW_POWER_BRAKE, "hw power brake"}};
	size_t i, used = 0;

	*buf = '\0';
	for (i = 0; i < ARRAY_SIZE(names) && used < len; i++)
		if (mask & names[i].bit)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			                         names[i].name);
	if (!*buf)
		snprintf(buf, len, "none");
}
