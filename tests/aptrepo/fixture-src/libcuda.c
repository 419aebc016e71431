/* FIXTURE: the two libcuda shared objects of dlbox.stack's test CUDA repositories. Neither is NVIDIA's driver.
 * Both carry the soname libcuda.so.1, as NVIDIA's do (the driver's libcuda.so.<version>; the toolkit's link stub
 * targets/<arch>/lib/stubs/libcuda.so, `patchelf --print-soname` -> libcuda.so.1, spack/spack#42825), so a program
 * linked against the stub needs libcuda.so.1, which only a driver (or cuda-compat) provides.
 * - DLBOX_STUB (cuda-driver-dev-X-Y's lib/stubs/libcuda.so): every entry point returns CUDA_ERROR_STUB_LIBRARY (34),
 *   as cuda.h documents it ("the CUDA driver that the application has loaded is a stub library ... CUDA API returning
 *   this error").
 * - otherwise (cuda-compat-X-Y's compat/libcuda.so.<driver>): cuDriverGetVersion() answers DRIVER_API (1000 * major +
 *   10 * minor of the newest CUDA the driver runs: 13000 for R580) and returns 0, as a driver does without a GPU;
 *   nothing else is in it.
 * Built by tests/aptrepo/fixture-src/libcuda.sh (gcc). */
#ifdef DLBOX_STUB
int cuInit(unsigned int flags) { (void)flags; return 34; }
int cuDriverGetVersion(int *version) { (void)version; return 34; }
#else
int cuDriverGetVersion(int *version) { *version = DRIVER_API; return 0; }
#endif
