// The block scheduler of the CUDA emulator (see cuda_emu.h): compiled into
// every emulated module.
#include <stdlib.h>
#include <ucontext.h>

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace {
const size_t kStack = 128 * 1024;
const unsigned kMaxThreads = 1024;
ucontext_t scheduler;
ucontext_t fibers[kMaxThreads];
char* stacks = nullptr;
int state[kMaxThreads];  // 0 running, 1 at a barrier, 2 returned
unsigned current;
void (*tramp)(void**);
void** tramp_args;

void fiber_main() {
    tramp(tramp_args);
    state[current] = 2;
}
}  // namespace

extern "C" void sg_emu_syncthreads(void) {
    state[current] = 1;
    swapcontext(&fibers[current], &scheduler);
}

static void set_thread(unsigned t) {
    current = t;
    threadIdx.x = t % blockDim.x;
    threadIdx.y = (t / blockDim.x) % blockDim.y;
    threadIdx.z = t / (blockDim.x * blockDim.y);
}

// Run kernel trampoline `fn` on the grid; 0 on success, -1 on a bad shape.
extern "C" int sg_emu_launch(void (*fn)(void**), void** args, unsigned gx,
                             unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz) {
    unsigned n = bx * by * bz;
    if (n == 0 || n > kMaxThreads || gx * gy * gz == 0) return -1;
    if (stacks == nullptr) {
        stacks = (char*)malloc(kStack * kMaxThreads);
        if (stacks == nullptr) return -2;
    }
    tramp = fn;
    tramp_args = args;
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
                blockIdx = {x, y, z};
                for (unsigned t = 0; t < n; ++t) {
                    getcontext(&fibers[t]);
                    fibers[t].uc_stack.ss_sp = stacks + (size_t)t * kStack;
                    fibers[t].uc_stack.ss_size = kStack;
                    fibers[t].uc_link = &scheduler;
                    makecontext(&fibers[t], fiber_main, 0);
                    state[t] = 0;
                }
                // Rounds: every live thread runs to its next barrier or end.
                for (;;) {
                    int live = 0;
                    for (unsigned t = 0; t < n; ++t) {
                        if (state[t] == 2) continue;
                        set_thread(t);
                        state[t] = 0;
                        swapcontext(&scheduler, &fibers[t]);
                        if (state[t] != 2) live = 1;
                    }
                    if (!live) break;
                }
            }
    return 0;
}
