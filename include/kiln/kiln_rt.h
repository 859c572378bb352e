/*===- kiln_rt.h - the C API of kiln-rt ------------------------------------===*
 *
 * For programs in C and for other languages' FFIs. Every function returns 0 on
 * success and -1 on failure; kiln_last_error() then describes the failure (per
 * thread, valid until the next call on that thread). A NULL handle or pointer
 * that a function needs is such a failure, named in the message
 * ("kiln_launch: module is NULL"); kiln_device_target and kiln_device_processors
 * give "" and 0 for a NULL device, and the free, close and destroy functions
 * accept NULL.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RT_H
#define KILN_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_device kiln_device;
typedef struct kiln_buffer kiln_buffer;
typedef struct kiln_module kiln_module;
typedef struct kiln_stream kiln_stream;

/* Element types, in kiln::DType order. */
enum {
  KILN_I1, KILN_I8, KILN_I16, KILN_I32, KILN_I64,
  KILN_F16, KILN_BF16, KILN_F32, KILN_F64, KILN_F8E4M3, KILN_F8E5M2,
  KILN_U8, KILN_U16, KILN_U32, KILN_U64
};

/* KILN_ARG_INT takes int_value, KILN_ARG_UINT uint_value (any 64 bits for a u64
 * argument), KILN_ARG_FLOAT float_value; each converts to the argument's dtype,
 * and a value the dtype cannot hold is an error at launch. */
typedef enum { KILN_ARG_TENSOR, KILN_ARG_INT, KILN_ARG_FLOAT, KILN_ARG_UINT } kiln_arg_kind;

typedef struct {
  kiln_arg_kind kind;
  int dtype;                 /* KILN_* */
  /* tensors */
  const kiln_buffer *buffer;
  int rank;
  const int64_t *sizes;
  const int64_t *strides;    /* in elements; NULL for dense row-major */
  int64_t offset;            /* in elements */
  /* scalars */
  int64_t int_value;
  double float_value;
  uint64_t uint_value;
} kiln_arg;

const char *kiln_last_error(void);

/* spec: "cuda", "hip", "vulkan", "cpu" (optionally ":index"), or NULL/"" for
 * KILN_DEVICE or the best device present. */
int kiln_device_open(const char *spec, kiln_device **out);
/* Buffers, modules and streams may be freed before or after their device is
 * closed: each keeps what it needs of the device until it is freed. */
void kiln_device_close(kiln_device *device);
/* The kilnc target for this device, e.g. "vulkan:1.3" ("vulkan:1.3:cpu" on
   lavapipe); owned by the device. */
const char *kiln_device_target(const kiln_device *device);
/* The processors that run programs side by side (SMs, compute units, worker
   threads): what a grid rule's num_processors() gives on this device. */
int64_t kiln_device_processors(const kiln_device *device);

int kiln_buffer_alloc(kiln_device *device, size_t bytes, kiln_buffer **out);
void kiln_buffer_free(kiln_buffer *buffer);
int kiln_buffer_write(kiln_device *device, kiln_buffer *buffer, const void *data, size_t bytes);
int kiln_buffer_read(kiln_device *device, const kiln_buffer *buffer, void *data, size_t bytes);

int kiln_module_load(kiln_device *device, const void *binary, size_t size,
                     const char *metadata_json, kiln_module **out);
int kiln_module_load_bundle(kiln_device *device, const void *bundle, size_t size,
                            kiln_module **out);
void kiln_module_free(kiln_module *module);

int kiln_launch(kiln_device *device, const kiln_module *module, const char *kernel,
                const kiln_arg *args, int num_args);
int kiln_synchronize(kiln_device *device);

/* Streams: in-order queues whose launches return once queued (see kiln::rt::Stream).
 * A stream is used by one thread at a time (give each thread its own); destroying
 * a stream waits for its queued launches. */
int kiln_stream_create(kiln_device *device, kiln_stream **out);
void kiln_stream_destroy(kiln_stream *stream);
int kiln_stream_launch(kiln_stream *stream, const kiln_module *module, const char *kernel,
                       const kiln_arg *args, int num_args);
int kiln_stream_synchronize(kiln_stream *stream);
/* Waits for the stream's work; *milliseconds is the device's clock then. */
int kiln_stream_record(kiln_stream *stream, double *milliseconds);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RT_H */
