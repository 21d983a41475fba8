/* A stand-in for libmlir_cuda_runtime.so for tests without a GPU: each mgpu* entry point a
   GPU kernel library calls forwards to a hook that the test sets (a ctypes callback), so the
   test records the calls and plays the device (host memory as device memory, no kernels run). */
#include <stddef.h>
#include <stdint.h>

void *(*hook_mgpuModuleLoad)(void *, int64_t);
void *(*hook_mgpuModuleGetFunction)(void *, const char *);
void (*hook_mgpuLaunchKernel)(void *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int32_t, void *,
                              void **, void **, int64_t);
void *(*hook_mgpuStreamCreate)(void);
void (*hook_mgpuStreamDestroy)(void *);
void (*hook_mgpuStreamSynchronize)(void *);
void *(*hook_mgpuMemAlloc)(uint64_t, void *, int8_t);
void (*hook_mgpuMemFree)(void *, void *);
void (*hook_mgpuMemcpy)(void *, void *, int64_t, void *);

void *mgpuModuleLoad(void *data, size_t size) { return hook_mgpuModuleLoad(data, (int64_t)size); }
/* runs from the library's destructors at exit, when no Python callback may run */
void mgpuModuleUnload(void *module) { (void)module; }
void *mgpuModuleGetFunction(void *module, const char *name) { return hook_mgpuModuleGetFunction(module, name); }
void mgpuLaunchKernel(void *fn, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                      int32_t smem, void *stream, void **params, void **extra, size_t n_params) {
    hook_mgpuLaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra, (int64_t)n_params);
}
void *mgpuStreamCreate(void) { return hook_mgpuStreamCreate(); }
void mgpuStreamDestroy(void *stream) { hook_mgpuStreamDestroy(stream); }
void mgpuStreamSynchronize(void *stream) { hook_mgpuStreamSynchronize(stream); }
void *mgpuMemAlloc(uint64_t size, void *stream, _Bool host_shared) { return hook_mgpuMemAlloc(size, stream, host_shared); }
void mgpuMemFree(void *ptr, void *stream) { hook_mgpuMemFree(ptr, stream); }
void mgpuMemcpy(void *dst, void *src, size_t size, void *stream) { hook_mgpuMemcpy(dst, src, (int64_t)size, stream); }
