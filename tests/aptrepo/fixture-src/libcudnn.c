/* FIXTURE: the stand-in libcudnn.so.<major>.<minor>.<patch> of dlbox.stack's test repositories and tarball.
 * Not NVIDIA's cuDNN: it only answers the two version calls the cudnn role reads, with the values of the
 * release it stands in for. Built by tests/aptrepo/fixture-src/libcudnn.sh (gcc), kept as base64 in the specs. */
unsigned long cudnnGetVersion(void) { return CUDNN_NUMBER; }
unsigned long cudnnGetCudartVersion(void) { return CUDART_NUMBER; }
