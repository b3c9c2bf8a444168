/* The onnxscope plugin ABI: how a shared library adds operator kernels.
 *
 * Plain C (C99 and C++), no C++ types across the boundary. A plugin exports
 * one function, onnxscope_plugin_entry(), returning a static description of
 * its kernels. The host reads abi_version (always the first field) before
 * anything else and refuses a library built for another version.
 *
 * Bump ONNXSCOPE_PLUGIN_ABI_VERSION on any change to a struct or function
 * type below; the host accepts only its own version. See docs/plugins.md. */
#ifndef ONNXSCOPE_PLUGIN_ABI_H
#define ONNXSCOPE_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXSCOPE_PLUGIN_ABI_VERSION 1u

/* Largest rank a shape function may write (output dims are inline arrays). */
#define ONNXSCOPE_PLUGIN_MAX_RANK 16

/* Status codes returned by kernels and shape functions. */
#define ONNXSCOPE_OK 0
#define ONNXSCOPE_ERROR 1

/* Element types: the numbers of onnx TensorProto.DataType. */
typedef enum onnxscope_dtype {
  ONNXSCOPE_DTYPE_UNDEFINED = 0,
  ONNXSCOPE_DTYPE_FLOAT = 1,
  ONNXSCOPE_DTYPE_UINT8 = 2,
  ONNXSCOPE_DTYPE_INT8 = 3,
  ONNXSCOPE_DTYPE_UINT16 = 4,
  ONNXSCOPE_DTYPE_INT16 = 5,
  ONNXSCOPE_DTYPE_INT32 = 6,
  ONNXSCOPE_DTYPE_INT64 = 7,
  ONNXSCOPE_DTYPE_BOOL = 9,
  ONNXSCOPE_DTYPE_FLOAT16 = 10,
  ONNXSCOPE_DTYPE_DOUBLE = 11,
  ONNXSCOPE_DTYPE_UINT32 = 12,
  ONNXSCOPE_DTYPE_UINT64 = 13,
  ONNXSCOPE_DTYPE_BFLOAT16 = 16
} onnxscope_dtype;

/* The node being inferred or run: opaque, read through the host callbacks. */
typedef struct onnxscope_node onnxscope_node;

/* Callbacks the host offers. Attribute getters return 1 when the attribute
 * is present with that type, 0 when absent, -1 when it has another type.
 * Returned pointers stay valid for the duration of the call. */
typedef struct onnxscope_host_api {
  uint32_t abi_version;
  const char* (*node_name)(const onnxscope_node* node);
  int64_t (*opset_version)(const onnxscope_node* node); /* of the node's domain */
  int (*attr_int)(const onnxscope_node* node, const char* name, int64_t* out);
  int (*attr_float)(const onnxscope_node* node, const char* name, float* out);
  int (*attr_string)(const onnxscope_node* node, const char* name, const char** data, size_t* size);
  int (*attr_ints)(const onnxscope_node* node, const char* name, const int64_t** data, size_t* count);
  int (*attr_floats)(const onnxscope_node* node, const char* name, const float** data, size_t* count);
} onnxscope_host_api;

/* A tensor as a kernel sees it: dense, row-major, little-endian. An omitted
 * optional input has dtype UNDEFINED and data NULL. Inputs are read-only;
 * outputs are allocated by the host (shapes from the shape function). */
typedef struct onnxscope_tensor {
  int32_t dtype; /* onnxscope_dtype */
  int32_t rank;
  const int64_t* dims;
  uint64_t element_count;
  void* data;
} onnxscope_tensor;

/* A value's type as a shape function sees it. rank -1: unknown rank.
 * A dim >= 0 is a size, -1 an unknown size, and <= -2 a symbolic size
 * ("batch"): equal values are the same symbol, so copying an input's dim to
 * an output says the output has that same size. */
typedef struct onnxscope_type {
  int32_t dtype; /* onnxscope_dtype; UNDEFINED when unknown or omitted */
  int32_t rank;
  int64_t dims[ONNXSCOPE_PLUGIN_MAX_RANK];
} onnxscope_type;

/* One kernel call. On failure write a message to `error` (NUL-terminated,
 * at most error_size bytes) and return non-zero. */
typedef struct onnxscope_kernel_call {
  const onnxscope_host_api* host;
  const onnxscope_node* node;
  void* user_data; /* the kernel entry's user_data */
  const onnxscope_tensor* inputs;
  size_t input_count;
  onnxscope_tensor* outputs;
  size_t output_count;
  char* error;
  size_t error_size;
} onnxscope_kernel_call;

/* One shape-function call. outputs[] arrive as dtype UNDEFINED, rank -1;
 * set each output's dtype and, when it can be known, rank and dims. The
 * host calls it during shape inference (dims may be -1) and before every
 * run of the kernel with concrete input shapes, where every output dim must
 * come out known. Return non-zero with a message to reject the inputs. */
typedef struct onnxscope_shape_call {
  const onnxscope_host_api* host;
  const onnxscope_node* node;
  void* user_data;
  const onnxscope_type* inputs;
  size_t input_count;
  onnxscope_type* outputs;
  size_t output_count;
  char* error;
  size_t error_size;
} onnxscope_shape_call;

typedef int (*onnxscope_kernel_fn)(onnxscope_kernel_call* call);
typedef int (*onnxscope_shape_fn)(onnxscope_shape_call* call);

/* One operator implementation. */
typedef struct onnxscope_kernel_desc {
  const char* domain;  /* "" or "ai.onnx" for the default domain */
  const char* op_type;
  int32_t since_version; /* opset versions of `domain` covered, inclusive */
  int32_t until_version; /* 0: no upper bound */
  int32_t min_inputs, max_inputs;   /* as written in the node; max -1: any number */
  int32_t min_outputs, max_outputs; /* max -1: any number */
  const char* description; /* one readable line */
  onnxscope_kernel_fn cpu;  /* required: host memory */
  onnxscope_kernel_fn cuda; /* optional (NULL): device memory, for a CUDA engine */
  onnxscope_shape_fn infer; /* required */
  void* user_data;
} onnxscope_kernel_desc;

typedef struct onnxscope_plugin_info {
  uint32_t abi_version; /* ONNXSCOPE_PLUGIN_ABI_VERSION; must stay the first field */
  const char* name;
  const char* version;
  const char* description;
  size_t kernel_count;
  const onnxscope_kernel_desc* kernels;
} onnxscope_plugin_info;

#define ONNXSCOPE_PLUGIN_ENTRY_SYMBOL "onnxscope_plugin_entry"

#if defined(_WIN32)
#define ONNXSCOPE_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ONNXSCOPE_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The one symbol a plugin exports; define it in the plugin (C or C++: this
 * declaration gives it C linkage) and return a description that stays valid
 * while the library is loaded. */
ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* onnxscope_plugin_entry(void);
typedef const onnxscope_plugin_info* (*onnxscope_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* ONNXSCOPE_PLUGIN_ABI_H */
