/* FIXTURE: the stand-in libcudart.so.<major>.<minor>.<patch> of dlbox.stack's test repositories.
 * Not NVIDIA's CUDA runtime: it only answers cudaRuntimeGetVersion() (CUDA's encoding, 1000 * major + 10 * minor:
 * 13000 for 13.0, as the CUDA Runtime API reference describes it) and cudaDriverGetVersion() with 0, which the real
 * runtime returns when no driver is installed. Built by tests/aptrepo/fixture-src/libcudart.sh (gcc). */
int cudaRuntimeGetVersion(int *version) { *version = CUDART_NUMBER; return 0; }
int cudaDriverGetVersion(int *version) { *version = 0; return 0; }
