// The block scheduler of the CUDA emulator (see cuda_emu.h): compiled into
// every emulated module.
#include <stdlib.h>
#include <string.h>
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

// The order blocks, and the threads of a block between two barriers, run in:
// SG_EMU_ORDER=forward (default), reverse, or shuffle (a fixed pseudo-random
// permutation per launch).  A kernel whose result depends on that order has
// a race, or a dependency between blocks, that a GPU would expose.
static int order_mode() {
    const char* m = getenv("SG_EMU_ORDER");
    if (m == nullptr || strcmp(m, "forward") == 0) return 0;
    if (strcmp(m, "reverse") == 0) return 1;
    return 2;
}

static void permutation(unsigned* p, unsigned n, int mode, unsigned long long* seed) {
    for (unsigned i = 0; i < n; ++i) p[i] = mode == 1 ? n - 1 - i : i;
    if (mode == 2)
        for (unsigned i = n; i > 1; --i) {
            *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
            unsigned j = (unsigned)((*seed >> 33) % i);
            unsigned t = p[i - 1]; p[i - 1] = p[j]; p[j] = t;
        }
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
    const int mode = order_mode();
    unsigned long long seed = 0x5eed5eedULL + gx * 31ULL + n;
    const unsigned long long n_blocks = (unsigned long long)gx * gy * gz;
    unsigned* border = (unsigned*)malloc(sizeof(unsigned) * n_blocks);
    if (border == nullptr) return -2;
    permutation(border, (unsigned)n_blocks, mode, &seed);
    unsigned torder[kMaxThreads];
    for (unsigned long long bi = 0; bi < n_blocks; ++bi) {
        const unsigned b = border[bi];
        blockIdx = {b % gx, (b / gx) % gy, b / (gx * gy)};
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
            permutation(torder, n, mode, &seed);
            for (unsigned ti = 0; ti < n; ++ti) {
                const unsigned t = torder[ti];
                if (state[t] == 2) continue;
                set_thread(t);
                state[t] = 0;
                swapcontext(&scheduler, &fibers[t]);
                if (state[t] != 2) live = 1;
            }
            if (!live) break;
        }
    }
    free(border);
    return 0;
}
