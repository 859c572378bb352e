//===- CAPI.cpp - the C API of kiln-rt ------------------------------------===//

#include "kiln/kiln_rt.h"

#include "kiln/Runtime.h"

#include <cmath>
#include <string>

using namespace kiln;
using namespace kiln::rt;

struct kiln_device {
  std::shared_ptr<Device> device;
  std::string target;
};
struct kiln_buffer {
  Buffer buffer;
};
struct kiln_module {
  Module module;
};
struct kiln_stream {
  Stream stream;
};

static thread_local std::string lastError;

static int report(const Status &s) {
  if (s)
    return 0;
  lastError = s.message();
  return -1;
}

/// A NULL handle or pointer that `call` needs: an error naming it, not a crash.
static int missing(const char *call, const char *what) {
  lastError = std::string(call) + ": " + what + " is NULL";
  return -1;
}

const char *kiln_last_error(void) { return lastError.c_str(); }

int kiln_device_open(const char *spec, kiln_device **out) {
  if (!out)
    return missing(__func__, "out");
  auto d = Device::open(spec ? spec : "");
  if (!d)
    return report(d.status());
  *out = new kiln_device{*d, (*d)->target()};
  return 0;
}

void kiln_device_close(kiln_device *device) { delete device; }
const char *kiln_device_target(const kiln_device *device) {
  if (!device)
    return missing(__func__, "device"), "";
  return device->target.c_str();
}
int64_t kiln_device_processors(const kiln_device *device) {
  if (!device)
    return missing(__func__, "device"), 0;
  return device->device->processors();
}

int kiln_buffer_alloc(kiln_device *device, size_t bytes, kiln_buffer **out) {
  if (!device || !out)
    return missing(__func__, device ? "out" : "device");
  auto b = device->device->allocate(bytes);
  if (!b)
    return report(b.status());
  *out = new kiln_buffer{*b};
  return 0;
}

void kiln_buffer_free(kiln_buffer *buffer) { delete buffer; }

int kiln_buffer_write(kiln_device *device, kiln_buffer *buffer, const void *data, size_t bytes) {
  if (!device || !buffer || (!data && bytes))
    return missing(__func__, !device ? "device" : !buffer ? "buffer" : "data");
  return report(device->device->write(buffer->buffer, data, bytes));
}

int kiln_buffer_read(kiln_device *device, const kiln_buffer *buffer, void *data, size_t bytes) {
  if (!device || !buffer || (!data && bytes))
    return missing(__func__, !device ? "device" : !buffer ? "buffer" : "data");
  return report(device->device->read(buffer->buffer, data, bytes));
}

int kiln_module_load(kiln_device *device, const void *binary, size_t size,
                     const char *metadata_json, kiln_module **out) {
  if (!device || (!binary && size) || !out || !metadata_json)
    return missing(__func__, !device ? "device" : !out ? "out" : !metadata_json ? "metadata_json"
                                                                                : "binary");
  auto m = device->device->load(std::string(static_cast<const char *>(binary), size),
                                metadata_json);
  if (!m)
    return report(m.status());
  *out = new kiln_module{*m};
  return 0;
}

int kiln_module_load_bundle(kiln_device *device, const void *bundle, size_t size,
                            kiln_module **out) {
  if (!device || (!bundle && size) || !out)
    return missing(__func__, !device ? "device" : !out ? "out" : "bundle");
  auto m = device->device->loadBundle(std::string(static_cast<const char *>(bundle), size));
  if (!m)
    return report(m.status());
  *out = new kiln_module{*m};
  return 0;
}

void kiln_module_free(kiln_module *module) { delete module; }

/// Converts a C argument list for `kernel` of `module`; false (with lastError
/// set) when it is malformed.
static bool convertArgs(const kiln_module &module, const char *kernel, const kiln_arg *args,
                        int num_args, std::vector<Arg> &list) {
  if (num_args < 0 || (num_args > 0 && !args))
    return report(Status::failure("bad argument list")) == 0;
  const KernelInfo *info = module.module.find(kernel);
  for (int i = 0; i < num_args; ++i) {
    const kiln_arg &a = args[i];
    // "argument 'x' (args[0])": the kernel's name for it where it has one.
    std::string which = "argument " + (info && size_t(i) < info->args.size()
                                           ? "'" + info->args[i].name + "' (args[" +
                                                 std::to_string(i) + "])"
                                           : "args[" + std::to_string(i) + "]");
    if (a.dtype < KILN_I1 || a.dtype > KILN_U64)
      return report(Status::failure(which + " has an unknown dtype " + std::to_string(a.dtype))) ==
             0;
    DType dt = static_cast<DType>(a.dtype);
    switch (a.kind) {
    case KILN_ARG_TENSOR: {
      if (!a.buffer || a.rank < 0 || (a.rank > 0 && !a.sizes))
        return report(Status::failure(which + (!a.buffer    ? " has no buffer"
                                               : a.rank < 0 ? " has rank " + std::to_string(a.rank)
                                                            : " has no sizes"))) == 0;
      std::vector<int64_t> sizes(a.sizes, a.sizes + a.rank);
      if (a.strides) {
        list.push_back(Arg::strided(a.buffer->buffer, dt, sizes,
                                    std::vector<int64_t>(a.strides, a.strides + a.rank), a.offset));
      } else { // dense row-major, from the offset
        Arg dense = Arg::tensor(a.buffer->buffer, dt, sizes);
        dense.offset = a.offset;
        list.push_back(dense);
      }
      break;
    }
    case KILN_ARG_INT: list.push_back(Arg::integer(a.int_value, dt)); break;
    case KILN_ARG_UINT: list.push_back(Arg::unsignedInteger(a.uint_value, dt)); break;
    case KILN_ARG_FLOAT: list.push_back(Arg::floating(a.float_value, dt)); break;
    default:
      return report(Status::failure(which + " has an unknown kind")) == 0;
    }
  }
  return true;
}

int kiln_launch(kiln_device *device, const kiln_module *module, const char *kernel,
                const kiln_arg *args, int num_args) {
  if (!device || !module || !kernel)
    return missing(__func__, !device ? "device" : !module ? "module" : "kernel");
  std::vector<Arg> list;
  if (!convertArgs(*module, kernel, args, num_args, list))
    return -1;
  return report(device->device->launch(module->module, kernel, list));
}

int kiln_synchronize(kiln_device *device) {
  if (!device)
    return missing(__func__, "device");
  return report(device->device->synchronize());
}

int kiln_stream_create(kiln_device *device, kiln_stream **out) {
  if (!device || !out)
    return missing(__func__, device ? "out" : "device");
  auto stream = device->device->createStream();
  if (!stream)
    return report(stream.status());
  *out = new kiln_stream{*stream};
  return 0;
}

void kiln_stream_destroy(kiln_stream *stream) { delete stream; }

int kiln_stream_launch(kiln_stream *stream, const kiln_module *module, const char *kernel,
                       const kiln_arg *args, int num_args) {
  if (!stream || !module || !kernel)
    return missing(__func__, !stream ? "stream" : !module ? "module" : "kernel");
  std::vector<Arg> list;
  if (!convertArgs(*module, kernel, args, num_args, list))
    return -1;
  return report(stream->stream.launch(module->module, kernel, list));
}

int kiln_stream_synchronize(kiln_stream *stream) {
  if (!stream)
    return missing(__func__, "stream");
  return report(stream->stream.synchronize());
}

int kiln_stream_record(kiln_stream *stream, double *milliseconds) {
  if (!stream || !milliseconds)
    return missing(__func__, stream ? "milliseconds" : "stream");
  auto event = stream->stream.record();
  if (!event)
    return report(event.status());
  *milliseconds = event->milliseconds;
  return 0;
}
