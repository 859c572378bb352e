/* The C API from C: vector_add on the CPU and, when present, on Vulkan. */
#include "kiln/kiln_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *data = malloc(*size + 1);
  if (fread(data, 1, *size, f) != *size) {
    fclose(f);
    free(data);
    return NULL;
  }
  data[*size] = 0;
  fclose(f);
  return data;
}

/* 1 (with a message) unless the call failed with `message`. */
static int refused(int rc, const char *spec, const char *message) {
  if (rc == 0 || strcmp(kiln_last_error(), message) != 0) {
    printf("FAIL %s: want \"%s\", got %d: %s\n", spec, message, rc, kiln_last_error());
    return 1;
  }
  return 0;
}

static int run(const char *spec, const char *ext) {
  kiln_device *device;
  if (kiln_device_open(spec, &device) != 0) {
    printf("skip %s: %s\n", spec, kiln_last_error());
    return 0;
  }
  if (kiln_device_processors(device) < 1) {
    printf("FAIL %s: %lld processors\n", spec, (long long)kiln_device_processors(device));
    return 1;
  }
  char path[1024], meta[1100];
  snprintf(path, sizeof path, "%s/vector_add.%s.%s", KILN_KERNELS_DIR, spec, ext);
  snprintf(meta, sizeof meta, "%s.json", path);
  size_t binSize, metaSize;
  char *bin = slurp(path, &binSize), *json = slurp(meta, &metaSize);
  kiln_module *module;
  if (!bin || !json || kiln_module_load(device, bin, binSize, json, &module) != 0) {
    printf("FAIL load %s: %s\n", spec, kiln_last_error());
    return 1;
  }
  enum { N = 1000 };
  float x[N], y[N], z[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)i;
  }
  kiln_buffer *bx, *by, *bz;
  kiln_buffer_alloc(device, sizeof x, &bx);
  kiln_buffer_alloc(device, sizeof y, &by);
  kiln_buffer_alloc(device, sizeof z, &bz);
  kiln_buffer_write(device, bx, x, sizeof x);
  kiln_buffer_write(device, by, y, sizeof y);
  int64_t n = N;
  kiln_arg args[3];
  memset(args, 0, sizeof args);
  kiln_buffer *bufs[3] = {bx, by, bz};
  for (int i = 0; i < 3; ++i) {
    args[i].kind = KILN_ARG_TENSOR;
    args[i].dtype = KILN_F32;
    args[i].buffer = bufs[i];
    args[i].rank = 1;
    args[i].sizes = &n;
  }
  int failed = 0;
  if (kiln_launch(device, module, "vector_add", args, 3) != 0 ||
      kiln_buffer_read(device, bz, z, sizeof z) != 0) {
    printf("FAIL launch %s: %s\n", spec, kiln_last_error());
    failed = 1;
  }
  for (int i = 0; i < N && !failed; ++i)
    if (z[i] != 1.5f * (float)i) {
      printf("FAIL %s: z[%d] = %g\n", spec, i, z[i]);
      failed = 1;
    }
  /* The same launch on a stream, queued twice in place (z = x + z), then waited for. */
  kiln_stream *stream = NULL;
  double t0 = 0, t1 = 0;
  args[1].buffer = bz;
  if (!failed && (kiln_stream_create(device, &stream) != 0 || kiln_stream_record(stream, &t0) != 0 ||
                  kiln_stream_launch(stream, module, "vector_add", args, 3) != 0 ||
                  kiln_stream_launch(stream, module, "vector_add", args, 3) != 0 ||
                  kiln_stream_record(stream, &t1) != 0 || kiln_stream_synchronize(stream) != 0 ||
                  kiln_buffer_read(device, bz, z, sizeof z) != 0)) {
    printf("FAIL stream %s: %s\n", spec, kiln_last_error());
    failed = 1;
  }
  for (int i = 0; i < N && !failed; ++i)
    if (z[i] != 1.5f * (float)i + 2.0f * (float)i || t1 < t0) {
      printf("FAIL stream %s: z[%d] = %g\n", spec, i, z[i]);
      failed = 1;
    }
  if (stream) {
    failed |= refused(kiln_stream_launch(stream, module, NULL, args, 3), spec,
                      "kiln_stream_launch: kernel is NULL");
    kiln_stream_destroy(stream);
  }
  args[1].buffer = by;
  /* An offset without strides starts a dense view there: z = x[12:] + y (48 bytes
     in: Vulkan wants 16-byte multiples). */
  int64_t shorter = N - 12;
  for (int i = 0; i < 3; ++i)
    args[i].sizes = &shorter;
  args[0].offset = 12;
  if (!failed && (kiln_launch(device, module, "vector_add", args, 3) != 0 ||
                  kiln_buffer_read(device, bz, z, sizeof z) != 0)) {
    printf("FAIL offset %s: %s\n", spec, kiln_last_error());
    failed = 1;
  }
  for (int i = 0; i < N - 12 && !failed; ++i)
    if (z[i] != (float)(i + 12) + 0.5f * (float)i) {
      printf("FAIL offset %s: z[%d] = %g (the offset was dropped?)\n", spec, i, z[i]);
      failed = 1;
    }
  args[0].offset = 0;
  for (int i = 0; i < 3; ++i)
    args[i].sizes = &n;
  /* A wrong dtype is an error, with a message. */
  args[0].dtype = KILN_F16;
  if (kiln_launch(device, module, "vector_add", args, 3) == 0 ||
      !strstr(kiln_last_error(), "argument 'x' has dtype f16")) {
    printf("FAIL %s: wrong dtype accepted or message wrong: %s\n", spec, kiln_last_error());
    failed = 1;
  }
  /* An unsigned scalar: 40000 reaches a u16 argument as itself, and a value past
     i64's range is reported as the number given, not wrapped. */
  snprintf(path, sizeof path, "%s/cpp_names.kbin", KILN_KERNELS_DIR);
  size_t bundleSize;
  char *bundle = slurp(path, &bundleSize);
  kiln_module *names;
  if (!bundle || kiln_module_load_bundle(device, bundle, bundleSize, &names) != 0) {
    printf("FAIL load bundle %s: %s\n", spec, kiln_last_error());
    failed = 1;
  } else {
    float zero[N] = {0};
    kiln_arg u[2];
    memset(u, 0, sizeof u);
    u[0] = args[2];
    u[1].kind = KILN_ARG_UINT;
    u[1].dtype = KILN_U16;
    u[1].uint_value = 40000;
    if (kiln_buffer_write(device, bz, zero, sizeof zero) != 0 ||
        kiln_launch(device, names, "add_u16", u, 2) != 0 ||
        kiln_buffer_read(device, bz, z, sizeof z) != 0) {
      printf("FAIL unsigned %s: %s\n", spec, kiln_last_error());
      failed = 1;
    }
    for (int i = 0; i < N && !failed; ++i)
      if (z[i] != 40000.0f) {
        printf("FAIL unsigned %s: z[%d] = %g\n", spec, i, z[i]);
        failed = 1;
      }
    u[1].uint_value = UINT64_MAX;
    if (kiln_launch(device, names, "add_u16", u, 2) == 0 ||
        !strstr(kiln_last_error(), "argument 'step' is 18446744073709551615")) {
      printf("FAIL %s: u64 max accepted for a u16 or message wrong: %s\n", spec,
             kiln_last_error());
      failed = 1;
    }
    /* A float for an integer argument must be a whole number: 2.5 is not rounded. */
    u[1].kind = KILN_ARG_FLOAT;
    u[1].float_value = 2.5;
    failed |= refused(kiln_launch(device, names, "add_u16", u, 2), spec,
                      "kernel 'add_u16': argument 'step' is 2.5, which does not fit in u16");
    /* A malformed tensor argument is named as the kernel names it. */
    u[0].buffer = NULL;
    failed |= refused(kiln_launch(device, names, "add_u16", u, 2), spec,
                      "argument 'out' (args[0]) has no buffer");
    kiln_module_free(names);
  }
  free(bundle);
  /* A NULL handle or pointer is an error naming it, not a crash. */
  failed |= refused(kiln_launch(NULL, module, "vector_add", args, 3), spec,
                    "kiln_launch: device is NULL");
  failed |= refused(kiln_launch(device, NULL, "vector_add", args, 3), spec,
                    "kiln_launch: module is NULL");
  failed |= refused(kiln_launch(device, module, NULL, args, 3), spec,
                    "kiln_launch: kernel is NULL");
  failed |= refused(kiln_stream_launch(NULL, module, "vector_add", args, 3), spec,
                    "kiln_stream_launch: stream is NULL");
  failed |= refused(kiln_buffer_write(device, NULL, x, sizeof x), spec,
                    "kiln_buffer_write: buffer is NULL");
  failed |= refused(kiln_buffer_read(device, bz, NULL, sizeof z), spec,
                    "kiln_buffer_read: data is NULL");
  failed |= refused(kiln_buffer_alloc(device, 16, NULL), spec, "kiln_buffer_alloc: out is NULL");
  failed |= refused(kiln_module_load(device, NULL, 64, json, &module), spec,
                    "kiln_module_load: binary is NULL");
  failed |= refused(kiln_module_load(device, bin, binSize, NULL, &module), spec,
                    "kiln_module_load: metadata_json is NULL");
  failed |= refused(kiln_module_load_bundle(NULL, bin, binSize, &module), spec,
                    "kiln_module_load_bundle: device is NULL");
  failed |= refused(kiln_stream_record(NULL, &t0), spec, "kiln_stream_record: stream is NULL");
  failed |= refused(kiln_synchronize(NULL), spec, "kiln_synchronize: device is NULL");
  failed |= refused(kiln_device_open("cpu", NULL), spec, "kiln_device_open: out is NULL");
  if (strcmp(kiln_device_target(NULL), "") != 0 || kiln_device_processors(NULL) != 0) {
    printf("FAIL %s: a NULL device has a target or processors\n", spec);
    failed = 1;
  }
  kiln_stream_destroy(NULL);
  /* Buffers and modules may outlive their device (they share its driver). */
  kiln_device_close(device);
  kiln_buffer_free(bx);
  kiln_buffer_free(by);
  kiln_buffer_free(bz);
  kiln_module_free(module);
  free(bin);
  free(json);
  if (!failed)
    printf("ok %s\n", spec);
  return failed;
}

int main(void) { return run("cpu", "so") + run("vulkan", "spv"); }
