/* The byte-channel port (stream_backend.h) over the engine client's
 * channels (engine/engine_channel.h); the context is the engine client. */
#ifndef SBX_ADAPTER_VM_BACKEND_STREAM_ENGINE_H
#define SBX_ADAPTER_VM_BACKEND_STREAM_ENGINE_H

#include "adapter/stream_backend.h"

extern const struct sbx_stream_ops stream_engine_ops;

#endif
