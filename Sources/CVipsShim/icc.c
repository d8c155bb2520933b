#include "shim.h"
#include <lcms2.h>
#include <string.h>

/* Building a Little CMS transform costs far more than running it on a fitted photo: libvips' icc_transform builds a
 * new one for every image (~20% of the image path's CPU for small uploads), yet uploads mostly carry one of a few
 * profiles (a phone model's Display P3, Adobe RGB, sRGB). The cache keeps the transform from each embedded profile
 * to libvips' built-in sRGB, made exactly as icc_transform makes it (8-bit RGB in and out, relative intent,
 * cmsFLAGS_NOCACHE, which also makes one transform safe to run from several threads at once). Entries are never
 * evicted while the cache lives: it holds at most SLUICE_ICC_ENTRIES profiles, and a profile beyond them goes to
 * libvips' own icc_transform. */
#define SLUICE_ICC_ENTRIES 16

typedef struct {
    void *profile;
    size_t length;
    cmsHTRANSFORM transform;
} SluiceIccEntry;

struct SluiceIccCache {
    GMutex lock;
    int count;
    SluiceIccEntry entries[SLUICE_ICC_ENTRIES];
};

SluiceIccCache *sluice_icc_cache_new(void) {
    SluiceIccCache *cache = g_new0(SluiceIccCache, 1);
    g_mutex_init(&cache->lock);
    return cache;
}

void sluice_icc_cache_free(SluiceIccCache *cache) {
    if (!cache) return;
    for (int i = 0; i < cache->count; i++) {
        cmsDeleteTransform(cache->entries[i].transform);
        g_free(cache->entries[i].profile);
    }
    g_mutex_clear(&cache->lock);
    g_free(cache);
}

/* The transform icc_transform would build for an image of 3 bands tagged sRGB or RGB carrying `profile`, or NULL
 * where icc_transform would do something else (a corrupt profile, one that is not RGB or cannot be read with the
 * relative intent: it then warns and falls back or fails its own way). */
static cmsHTRANSFORM build_transform(const void *profile, size_t length) {
    cmsHPROFILE in = cmsOpenProfileFromMem(profile, (cmsUInt32Number) length);
    if (!in) return NULL;
    cmsHTRANSFORM transform = NULL;
    VipsBlob *srgb = NULL;
    /* vips_icc_load_profile_blob's checks: the profile must be RGB data (the image's 3 bands) and support the relative
     * intent as an input profile (libvips falls back to its own sRGB profile for one that does not, such as a
     * profile with a perceptual table only, or a device link). */
    if (cmsGetColorSpace(in) == cmsSigRgbData && cmsIsIntentSupported(in, INTENT_RELATIVE_COLORIMETRIC, LCMS_USED_AS_INPUT)
        && !vips_profile_load("srgb", &srgb, NULL) && srgb) {
        size_t srgb_length = 0;
        const void *srgb_data = vips_blob_get(srgb, &srgb_length);
        cmsHPROFILE out = cmsOpenProfileFromMem(srgb_data, (cmsUInt32Number) srgb_length);
        if (out) {
            transform = cmsCreateTransform(in, TYPE_RGB_8, out, TYPE_RGB_8, INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_NOCACHE);
            cmsCloseProfile(out);
        }
    }
    if (srgb) vips_area_unref(VIPS_AREA(srgb));
    cmsCloseProfile(in);
    return transform;
}

/* The cached transform for `profile`, building and keeping it on first use; NULL when it cannot be built the way
 * icc_transform builds it, or the cache is full. */
static cmsHTRANSFORM cached_transform(SluiceIccCache *cache, const void *profile, size_t length) {
    g_mutex_lock(&cache->lock);
    for (int i = 0; i < cache->count; i++) {
        if (cache->entries[i].length == length && !memcmp(cache->entries[i].profile, profile, length)) {
            cmsHTRANSFORM found = cache->entries[i].transform;
            g_mutex_unlock(&cache->lock);
            return found;
        }
    }
    cmsHTRANSFORM transform = NULL;
    /* Built under the lock: two threads meeting a new profile at once build it once. */
    if (cache->count < SLUICE_ICC_ENTRIES && (transform = build_transform(profile, length))) {
        cache->entries[cache->count].profile = g_memdup2(profile, length);
        cache->entries[cache->count].length = length;
        cache->entries[cache->count].transform = transform;
        cache->count++;
    }
    g_mutex_unlock(&cache->lock);
    return transform;
}

int sluice_icc_to_srgb(SluiceIccCache *cache, VipsImage *in, VipsImage **out) {
    const void *profile = NULL;
    size_t length = 0;
    cmsHTRANSFORM transform = NULL;
    if (cache && in->Bands == 3 && in->BandFmt == VIPS_FORMAT_UCHAR && in->Coding == VIPS_CODING_NONE
        && (in->Type == VIPS_INTERPRETATION_sRGB || in->Type == VIPS_INTERPRETATION_RGB)
        && vips_image_get_typeof(in, VIPS_META_ICC_NAME) && !vips_image_get_blob(in, VIPS_META_ICC_NAME, &profile, &length))
        transform = cached_transform(cache, profile, length);
    if (!transform)
        return vips_icc_transform(in, out, "srgb", "intent", VIPS_INTENT_RELATIVE, "embedded", TRUE, "depth", 8, NULL);

    /* A memory image of the same size and metadata, its pixels run through the transform row by row, tagged as
     * icc_transform tags its output: sRGB, with the sRGB profile attached. */
    /* The pixels in memory (an image already there, such as a fitted one, is only referenced). */
    VipsImage *source = sluice_vips_render_memory(in, sluice_vips_renders_here(in));
    if (!source) return -1;
    VipsImage *pixels = vips_image_new_memory();
    VipsBlob *srgb = NULL;
    if (vips_image_pipelinev(pixels, VIPS_DEMAND_STYLE_THINSTRIP, source, NULL) || vips_image_write_prepare(pixels)
        || vips_profile_load("srgb", &srgb, NULL) || !srgb) {
        g_object_unref(pixels);
        g_object_unref(source);
        return -1;
    }
    pixels->Type = VIPS_INTERPRETATION_sRGB;
    const size_t in_stride = VIPS_IMAGE_SIZEOF_LINE(source), out_stride = VIPS_IMAGE_SIZEOF_LINE(pixels);
    for (int y = 0; y < source->Ysize; y++)
        cmsDoTransform(transform, VIPS_IMAGE_ADDR(source, 0, 0) + in_stride * y, VIPS_IMAGE_ADDR(pixels, 0, 0) + out_stride * y,
                       (cmsUInt32Number) source->Xsize);
    g_object_unref(source);
    size_t srgb_length = 0;
    const void *srgb_data = vips_blob_get(srgb, &srgb_length);
    vips_image_set_blob_copy(pixels, VIPS_META_ICC_NAME, srgb_data, srgb_length);
    vips_area_unref(VIPS_AREA(srgb));
    *out = pixels;
    return 0;
}
