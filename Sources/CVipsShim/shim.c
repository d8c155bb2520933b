#include "shim.h"
#include <string.h>
#include <malloc.h>

static void sluice_ignore_log(const gchar *domain, GLogLevelFlags level, const gchar *message, gpointer data) {
    (void) domain; (void) level; (void) message; (void) data;
}

int sluice_vips_init(int vips_threads) {
    /* Pixel buffers of a few MB are allocated and freed per image: keep them on the heap instead of
     * mmap/munmap each time (page faults were ~10% of CPU), and cap arenas so RSS stays bounded. */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
    mallopt(M_ARENA_MAX, 4);
    if (VIPS_INIT("sluice")) return -1;
    /* Decoder warnings become errors through fail_on; the reason is reported per item, not on stderr. */
    g_log_set_handler("VIPS", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE, sluice_ignore_log, NULL);
    vips_block_untrusted_set(TRUE);
    /* Belt and braces: these loaders parse documents or hand files to big external libraries. */
    vips_operation_block_set("VipsForeignLoadMagick", TRUE);
    vips_operation_block_set("VipsForeignLoadPdf", TRUE);
    vips_operation_block_set("VipsForeignLoadSvg", TRUE);
    vips_operation_block_set("VipsForeignLoadOpenslide", TRUE);
    vips_operation_block_set("VipsForeignLoadMat", TRUE);
    vips_operation_block_set("VipsForeignLoadFits", TRUE);
    vips_operation_block_set("VipsForeignLoadVips", TRUE);
    vips_cache_set_max(0);
    vips_cache_set_max_mem(0);
    vips_cache_set_max_files(0);
    if (vips_threads > 0) vips_concurrency_set(vips_threads);
    return 0;
}

VipsImage *sluice_vips_render_memory(VipsImage *in, int here) {
    if (!here || sluice_vips_in_memory(in)) return vips_image_copy_memory(in);
    /* As vips_image_write into a memory image does (the fields and metadata of `in`, the pixels written through a
     * region on the memory), but with the one region prepared here instead of strip by strip in a thread pool. */
    VipsImage *out = vips_image_new_memory();
    VipsRegion *source = NULL, *target = NULL;
    VipsRect whole = {0, 0, in->Xsize, in->Ysize};
    const int failed = vips_image_pipelinev(out, VIPS_DEMAND_STYLE_THINSTRIP, in, NULL) || vips_image_write_prepare(out)
        || !(source = vips_region_new(in)) || !(target = vips_region_new(out)) || vips_region_image(target, &whole)
        || vips_region_prepare_to(source, target, &whole, 0, 0);
    if (source) g_object_unref(source);
    if (target) g_object_unref(target);
    if (failed) {
        g_object_unref(out);
        return NULL;
    }
    return out;
}

int sluice_vips_in_memory(VipsImage *image) {
    return image->dtype == VIPS_IMAGE_SETBUF || image->dtype == VIPS_IMAGE_SETBUF_FOREIGN || image->dtype == VIPS_IMAGE_MMAPIN
        || image->dtype == VIPS_IMAGE_MMAPINRW;
}

int sluice_vips_renders_here(VipsImage *source) {
    return (guint64) source->Xsize * (guint64) source->Ysize
        <= (sluice_vips_in_memory(source) ? SLUICE_RENDER_HERE_MAX_MEMORY_PIXELS : SLUICE_RENDER_HERE_MAX_PIXELS);
}

const char *sluice_vips_loader(const void *buf, size_t len) {
    return vips_foreign_find_load_buffer(buf, len);
}

VipsImage *sluice_vips_open_header(const void *buf, size_t len) {
    return vips_image_new_from_buffer(buf, len, "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
}

/* vips_thumbnail_image(in, width, height, size down), and with `profile` its export_profile: an image with an
 * embedded ICC profile is then reduced in its own colour space and transformed to `profile` after. */
static int libvips_fit(VipsImage *in, VipsImage **out, int width, int height, const char *profile) {
    return profile
        ? vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_DOWN, "export_profile", profile, NULL)
        : vips_thumbnail_image(in, out, width, "height", height, "size", VIPS_SIZE_DOWN, NULL);
}

/* What libvips_fit makes of a 3-band 8-bit image less than four times too large, made with
 * sluice_reduceh_lanczos3_upright for its horizontal step: for such a reduction vips_thumbnail scales both axes
 * by the larger ratio with vips_reducev then vips_reduceh (Lanczos3), transforms an image with an embedded
 * profile to `profile` (one ICC transform, relative intent, 8-bit), then turns the result upright by its EXIF
 * orientation (larger ones begin with a box shrink); the shim's reduction writes its pixels straight into their
 * upright places, and the transform works pixel by pixel, so doing it after the turn changes nothing. Such an
 * image smaller than the box with an embedded profile is only transformed and turned, as vips_thumbnail does.
 * Anything else goes to libvips_fit. */
static int sluice_fit_lanczos3(VipsImage *in, VipsImage **out, int width, int height, const char *profile, SluiceIccCache *icc) {
    const double shrink = VIPS_MAX((double) in->Xsize / width, (double) in->Ysize / height);
    /* vips_thumbnail converts to sRGB before reducing (a profiled image excepted); every 3-band 8-bit JPEG and
     * PNG loads as sRGB, and anything else is left to it. */
    if (in->BandFmt != VIPS_FORMAT_UCHAR || in->Bands != 3 || in->Coding != VIPS_CODING_NONE || in->Type != VIPS_INTERPRETATION_sRGB)
        return libvips_fit(in, out, width, height, profile);
    /* Nothing to reduce (an image smaller than the box): vips_thumbnail only transforms an embedded profile to
     * `profile` and, when its orientation is not 1, makes a memory copy (the loader reads rows in order only) and
     * turns it upright; the transform is the cache's. Without a profile to transform, libvips' thumbnail. */
    if (shrink <= 1.0) {
        if (!profile || !vips_image_get_typeof(in, VIPS_META_ICC_NAME)) return libvips_fit(in, out, width, height, profile);
        const int orientation = vips_image_get_orientation(in);
        VipsImage *transformed = NULL;
        if (sluice_icc_to_srgb(icc, in, &transformed)) return -1;
        if (orientation == 1) {
            *out = transformed;
            return 0;
        }
        VipsImage *memory = sluice_vips_render_memory(transformed, sluice_vips_renders_here(in));
        g_object_unref(transformed);
        if (!memory) return -1;
        const int result = vips_autorot(memory, out, NULL);
        g_object_unref(memory);
        return result;
    }
    if (shrink >= 4.0) return libvips_fit(in, out, width, height, profile);
    /* As vips_thumbnail: no axis shrunk below one pixel, and vips_resize reduces by 1 / (1 / shrink), which can
     * differ from shrink in its last bit (and so in the output's size and masks). */
    const double hshrink = 1.0 / (1.0 / VIPS_MIN(shrink, (double) in->Xsize));
    const double vshrink = 1.0 / (1.0 / VIPS_MIN(shrink, (double) in->Ysize));
    /* vips_resize's gap of 2: reduceh and reducev box-shrink first when an axis's rounded size is 4 times
     * smaller or more; leave those to libvips. */
    const int out_width = VIPS_ROUND_UINT(in->Xsize / hshrink), out_height = VIPS_ROUND_UINT(in->Ysize / vshrink);
    if (out_width < 1 || out_height < 1 || VIPS_FLOOR((double) in->Xsize / out_width / 2.0) > 1
        || VIPS_FLOOR((double) in->Ysize / out_height / 2.0) > 1)
        return libvips_fit(in, out, width, height, profile);
    /* vips_thumbnail transforms only an image that has a profile of its own. */
    if (!vips_image_get_typeof(in, VIPS_META_ICC_NAME)) profile = NULL;
    VipsImage *vertical = NULL, *vertical_memory = NULL, *reduced = NULL;
    int result = -1;
    if (!vips_reducev(in, &vertical, vshrink, "kernel", VIPS_KERNEL_LANCZOS3, NULL)
        && (vertical_memory = sluice_vips_render_memory(vertical, sluice_vips_renders_here(in)))
        && !sluice_reduceh_lanczos3_upright(vertical_memory, &reduced, hshrink)) {
        if (!profile) {
            *out = reduced;
            reduced = NULL;
            result = 0;
        } else {
            /* `profile` is "srgb" (the only export profile the callers ask for). */
            result = sluice_icc_to_srgb(icc, reduced, out);
        }
    }
    if (vertical) g_object_unref(vertical);
    if (vertical_memory) g_object_unref(vertical_memory);
    if (reduced) g_object_unref(reduced);
    return result;
}

int sluice_vips_thumbnail_buffer(const void *buf, size_t len, VipsImage **out, int width, int height,
                                 const char *loader_options, int has_icc_profile, int load_shrink, int libvips_reduction,
                                 SluiceIccCache *icc) {
    /* Only an embedded profile needs the (costly, per-pixel) ICC transform; without one the pixels are
     * taken as sRGB already and anything else is converted by sluice_vips_to_srgb afterwards. */
    const char *profile = has_icc_profile ? "srgb" : NULL;
    if (load_shrink >= 1) {
        /* libvips' thumbnail leaves a factor of two for its final reduction, so a 12 MP photo fitted into
         * 1920 px is decoded at full size. libjpeg's DCT-domain shrink gives the same result from a quarter of
         * the pixels (as sharp's default fastShrinkOnLoad does); the Lanczos reduction then does the rest,
         * turning upright and exporting sRGB as before. At 1 (a JPEG less than twice too large, a PNG: neither
         * is shrunk on load by vips_thumbnail either) the image is loaded whole and fitted the same way. */
        VipsImage *loaded = load_shrink > 1
            ? vips_image_new_from_buffer(buf, len, loader_options ? loader_options : "",
                                         "shrink", load_shrink, "access", VIPS_ACCESS_SEQUENTIAL, NULL)
            : vips_image_new_from_buffer(buf, len, loader_options ? loader_options : "", "access", VIPS_ACCESS_SEQUENTIAL, NULL);
        if (!loaded) return -1;
        int result = libvips_reduction ? libvips_fit(loaded, out, width, height, profile)
                                       : sluice_fit_lanczos3(loaded, out, width, height, profile, icc);
        g_object_unref(loaded);
        return result;
    }
    if (profile)
        return vips_thumbnail_buffer((void *) buf, len, out, width,
                                     "height", height,
                                     "size", VIPS_SIZE_DOWN,
                                     "export_profile", profile,
                                     "option_string", loader_options,
                                     NULL);
    return vips_thumbnail_buffer((void *) buf, len, out, width,
                                 "height", height,
                                 "size", VIPS_SIZE_DOWN,
                                 "option_string", loader_options,
                                 NULL);
}

int sluice_vips_thumbnail_image(VipsImage *in, VipsImage **out, int width, int height, int libvips_reduction) {
    return libvips_reduction ? libvips_fit(in, out, width, height, NULL) : sluice_fit_lanczos3(in, out, width, height, NULL, NULL);
}

int sluice_vips_flatten_white(VipsImage *in, VipsImage **out) {
    double white[3] = {255.0, 255.0, 255.0};
    if (in->Type == VIPS_INTERPRETATION_RGB16 || in->Type == VIPS_INTERPRETATION_GREY16) {
        white[0] = white[1] = white[2] = 65535.0;
    }
    int bands = vips_image_get_bands(in) - 1;
    if (bands < 1) bands = 1;
    if (bands > 3) bands = 3;
    VipsArrayDouble *background = vips_array_double_new(white, bands);
    int result = vips_flatten(in, out, "background", background, NULL);
    vips_area_unref(VIPS_AREA(background));
    return result;
}

int sluice_vips_to_srgb(VipsImage *in, VipsImage **out) {
    return vips_colourspace(in, out, VIPS_INTERPRETATION_sRGB, NULL);
}

int sluice_vips_has_icc(VipsImage *in) {
    return vips_image_get_typeof(in, VIPS_META_ICC_NAME) != 0;
}

int sluice_vips_exif_blob(VipsImage *in, const void **data, size_t *len) {
    if (vips_image_get_typeof(in, VIPS_META_EXIF_NAME) == 0) return 0;
    if (vips_image_get_blob(in, VIPS_META_EXIF_NAME, data, len)) return 0;
    return 1;
}

int sluice_vips_xmp_blob(VipsImage *in, const void **data, size_t *len) {
    if (vips_image_get_typeof(in, VIPS_META_XMP_NAME) == 0) return 0;
    if (vips_image_get_blob(in, VIPS_META_XMP_NAME, data, len)) return 0;
    return 1;
}

char *sluice_vips_error_copy(void) {
    return vips_error_buffer_copy();
}

void sluice_vips_unref(VipsImage *image) {
    if (image) g_object_unref(image);
}

void sluice_g_free(void *p) {
    g_free(p);
}

int sluice_vips_rgb_pixels(const void *buf, size_t len, int width, int height, void **out, size_t *out_len) {
    VipsImage *thumb = NULL, *flat = NULL, *srgb = NULL;
    if (vips_thumbnail_buffer((void *) buf, len, &thumb, width, "height", height, "size", VIPS_SIZE_FORCE, NULL))
        return -1;
    VipsImage *current = thumb;
    if (vips_image_hasalpha(current)) {
        if (vips_flatten(current, &flat, NULL)) { g_object_unref(thumb); return -1; }
        current = flat;
    }
    if (vips_colourspace(current, &srgb, VIPS_INTERPRETATION_sRGB, NULL)) {
        g_object_unref(thumb);
        if (flat) g_object_unref(flat);
        return -1;
    }
    *out = vips_image_write_to_memory(srgb, out_len);
    g_object_unref(srgb);
    if (flat) g_object_unref(flat);
    g_object_unref(thumb);
    return *out ? 0 : -1;
}

#include <zlib.h>

long sluice_inflated_size(const void *buf, size_t len, size_t limit) {
    z_stream stream;
    memset(&stream, 0, sizeof(stream));
    if (inflateInit(&stream) != Z_OK) return -1;
    stream.next_in = (Bytef *) buf;
    stream.avail_in = (uInt) len;
    unsigned char out[16384];
    size_t total = 0;
    int status = Z_OK;
    while (status == Z_OK && total <= limit) {
        stream.next_out = out;
        stream.avail_out = sizeof(out);
        status = inflate(&stream, Z_NO_FLUSH);
        total += sizeof(out) - stream.avail_out;
        if (status == Z_BUF_ERROR && stream.avail_in == 0) break;
    }
    inflateEnd(&stream);
    if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) return -1;
    return (long) total;
}

int sluice_vips_pattern_jpeg(int width, int height, const void *profile, size_t profile_len, int orientation,
                             void **buf, size_t *len) {
    VipsImage *base = vips_image_new();
    VipsImage **t = (VipsImage **) vips_object_local_array(VIPS_OBJECT(base), 13);
    int result = -1;
    /* Sharp edges, fine stripes and smooth ramps in each band, so every tap of a reduction matters. */
    if (!vips_xyz(&t[0], width, height, NULL)
        && !vips_extract_band(t[0], &t[1], 0, NULL) && !vips_extract_band(t[0], &t[2], 1, NULL)
        && !vips_linear1(t[1], &t[3], 7.0, 0.0, NULL) && !vips_linear1(t[2], &t[4], 3.0, 0.0, NULL)
        && !vips_add(t[3], t[4], &t[5], NULL) && !vips_remainder_const1(t[5], &t[6], 256, NULL)
        && !vips_multiply(t[1], t[2], &t[7], NULL) && !vips_remainder_const1(t[7], &t[8], 251, NULL)
        && !vips_eorimage(t[1], t[2], &t[9], NULL) && !vips_remainder_const1(t[9], &t[10], 256, NULL)) {
        VipsImage *bands[3] = {t[6], t[8], t[10]};
        /* A copy of its own before its metadata is set. */
        if (!vips_bandjoin(bands, &t[11], 3, NULL) && !vips_cast_uchar(t[11], &t[12], NULL)) {
            VipsImage *pels = vips_image_copy_memory(t[12]);
            result = pels ? 0 : -1;
            /* The profile, carried into the pattern's JPEG. */
            if (pels && profile) vips_image_set_blob_copy(pels, VIPS_META_ICC_NAME, profile, profile_len);
            /* An EXIF orientation tag (1-8), written into the JPEG's EXIF by jpegsave. */
            if (pels && orientation >= 1 && orientation <= 8) vips_image_set_int(pels, VIPS_META_ORIENTATION, orientation);
            if (!result) result = vips_jpegsave_buffer(pels, buf, len, "Q", 90, NULL);
            if (pels) g_object_unref(pels);
        }
    }
    g_object_unref(base);
    return result;
}
