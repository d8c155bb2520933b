#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <orc/orcprogram.h>

/* libvips compiles an Orc program each time it builds a vertical reduction (vips_reducev, which vips_thumbnail
 * and the shim's fitting build for every fitted image) and frees it when the reduction is disposed. Debian 12's
 * liborc (0.4.33) hands out and takes back its executable code memory through a list of chunks that it splits
 * (orc_code_allocate_codemem) and merges (orc_code_chunk_free) without holding its lock, so two imaging threads
 * compiling or freeing at once corrupt the list: SIGSEGV in liborc or glibc's "malloc(): invalid next size"
 * (libvips#1211, sharp#172). Four threads building reductions crash within a few hundred builds.
 *
 * The two calls libvips makes are defined here, so the dynamic linker binds libvips' calls to them (the
 * executable comes first in symbol lookup; liborc's own internal calls are direct and unaffected): each takes one
 * lock and calls liborc's function. Running the compiled programs stays unlocked. Should liborc's functions not
 * be found, a compile reports failure, which libvips answers by taking its C path (the same reduction, slower). */

static pthread_mutex_t sluice_orc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t sluice_orc_once = PTHREAD_ONCE_INIT;
static OrcCompileResult (*sluice_orc_compile)(OrcProgram *);
static void (*sluice_orc_free)(OrcProgram *);

static void sluice_orc_resolve(void) {
    sluice_orc_compile = (OrcCompileResult (*)(OrcProgram *)) dlsym(RTLD_NEXT, "orc_program_compile");
    sluice_orc_free = (void (*)(OrcProgram *)) dlsym(RTLD_NEXT, "orc_program_free");
}

OrcCompileResult orc_program_compile(OrcProgram *program) {
    pthread_once(&sluice_orc_once, sluice_orc_resolve);
    if (!sluice_orc_compile) return ORC_COMPILE_RESULT_UNKNOWN_COMPILE;
    pthread_mutex_lock(&sluice_orc_lock);
    const OrcCompileResult result = sluice_orc_compile(program);
    pthread_mutex_unlock(&sluice_orc_lock);
    return result;
}

void orc_program_free(OrcProgram *program) {
    pthread_once(&sluice_orc_once, sluice_orc_resolve);
    /* Without liborc's free the program is left allocated: a leak, not a corrupted list. */
    if (!sluice_orc_free) return;
    pthread_mutex_lock(&sluice_orc_lock);
    sluice_orc_free(program);
    pthread_mutex_unlock(&sluice_orc_lock);
}
