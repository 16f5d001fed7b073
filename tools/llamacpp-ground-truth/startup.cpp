// The start-up a llama.cpp program performs (load a model, create a context), nothing more:
// libllama logs the cache sizes it allocates to stderr, which is what the fixtures record.
// It then prints the bytes of the context's memory buffers (every KV cache and recurrent state,
// llama_get_memory_breakdown's "context"), the exact figure the MiB lines round.
// Usage: startup MODEL.gguf [key=value ...] with the context settings llama-cli takes:
//   ctx (-c), parallel (-np), ubatch (-ub), ctk, ctv, fa (on/off/auto), swa_full (0/1),
//   kv_unified (0/1), rs_seq (n_rs_seq).
#include "llama.h"
#include "llama-ext.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static ggml_type type_named(const std::string & name) {
    for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
        const char * tn = ggml_type_name((ggml_type) t);
        if (tn != nullptr && name == tn) {
            return (ggml_type) t;
        }
    }
    fprintf(stderr, "unknown cache type %s\n", name.c_str());
    exit(2);
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [key=value ...]\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    llama_context_params cparams = llama_context_default_params();
    // the defaults of llama-cli and llama-server (common.h), not of llama_context_default_params
    cparams.n_seq_max = 1;
    cparams.kv_unified = false;
    cparams.swa_full = false;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        const size_t eq = arg.find('=');
        if (eq == std::string::npos) {
            fprintf(stderr, "expected key=value, got %s\n", argv[i]);
            return 2;
        }
        const std::string key = arg.substr(0, eq);
        const std::string value = arg.substr(eq + 1);
        const unsigned number = (unsigned) strtoul(value.c_str(), nullptr, 10);
        if (key == "ctx") {
            cparams.n_ctx = number;
        } else if (key == "parallel") {
            cparams.n_seq_max = number;
        } else if (key == "ubatch") {
            cparams.n_ubatch = number;
            cparams.n_batch = number > cparams.n_batch ? number : cparams.n_batch;
        } else if (key == "ctk") {
            cparams.type_k = type_named(value);
        } else if (key == "ctv") {
            cparams.type_v = type_named(value);
        } else if (key == "fa") {
            cparams.flash_attn_type = value == "on"  ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                                    : value == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                     : LLAMA_FLASH_ATTN_TYPE_AUTO;
        } else if (key == "swa_full") {
            cparams.swa_full = number != 0;
        } else if (key == "kv_unified") {
            cparams.kv_unified = number != 0;
        } else if (key == "rs_seq") {
            cparams.n_rs_seq = number;
        } else {
            fprintf(stderr, "unknown setting %s\n", key.c_str());
            return 2;
        }
    }
    llama_model_params mparams = llama_model_default_params();
    llama_model * model = llama_model_load_from_file(argv[1], mparams);
    if (model == nullptr) {
        return 1;
    }
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == nullptr) {
        llama_model_free(model);
        return 1;
    }
    size_t context_bytes = 0;
    for (const auto & [buft, data] : llama_get_memory_breakdown(ctx)) {
        context_bytes += data.context;
    }
    fprintf(stderr, "startup: context memory buffers = %zu bytes\n", context_bytes);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
